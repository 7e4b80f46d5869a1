import { createPortal } from 'preact/compat';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * A modal dialog a page opens (the passkey dialogs): drawn beside the page
 * (so the page can be made inert without it), the focus starts at its first
 * field, Tab and Shift+Tab cycle inside it, Escape cancels, and on close the
 * focus goes back to the element that opened it, or to the page's heading.
 */
export function PageDialog({ labelledBy, onCancel, children }: { labelledBy: string; onCancel: () => void; children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const behind = [...document.querySelectorAll<HTMLElement>('body > #app > :not(.backdrop)')];
    for (const el of behind) el.inert = true;
    const first = box.current?.querySelector<HTMLElement>('input, select') ?? box.current?.querySelector<HTMLElement>(FOCUSABLE);
    first?.focus();
    return () => {
      for (const el of behind) el.inert = false;
      setTimeout(() => {
        if (before?.isConnected) before.focus();
        else document.querySelector<HTMLElement>('main h1')?.focus();
      }, 0);
    };
  }, []);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      onCancel();
      return;
    }
    if (e.key !== 'Tab' || !box.current) return;
    const items = [...box.current.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.offsetParent !== null);
    if (items.length === 0) return;
    const first = items[0]!;
    const last = items[items.length - 1]!;
    const at = document.activeElement;
    if (e.shiftKey && (at === first || !box.current.contains(at))) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && (at === last || !box.current.contains(at))) {
      e.preventDefault();
      first.focus();
    }
  };
  const host = document.getElementById('app') ?? document.body;
  return createPortal(
    <div class="backdrop">
      <div role="dialog" aria-modal="true" aria-labelledby={labelledBy} class="dialog" ref={box} onKeyDown={onKeyDown}>
        {children}
      </div>
    </div>,
    host,
  );
}
