/**
 * The OnCalendar= lines of a timer rendered from its template in
 * deploy/systemd: the template's first OnCalendar= line is replaced by one
 * line per expression (`%` doubled: systemd reads it as a specifier). One
 * function for `mailsvc install` and `mailsvc backup units`, so both write the
 * same timer.
 */
export function withCalendars(template: string, calendars: readonly string[]): string {
  const lines = calendars.map((c) => `OnCalendar=${c.replace(/%/g, '%%')}`).join('\n');
  return template.replace(/^OnCalendar=.*$/m, () => lines);
}

/** The OnCalendar= expressions of a rendered timer. */
export const calendarsOf = (text: string): string[] => [...text.matchAll(/^OnCalendar=(.*)$/gm)].map((m) => m[1] ?? '');
