import { createPortal } from 'preact/compat';
import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * What makes a box modal, for every dialog of the panel: while it is open the
 * elements `behind` matches are inert, the focus starts at its `first` field
 * (else its first focusable element), Tab and Shift+Tab cycle inside it, Escape
 * cancels; on close the focus goes back to what `before` named when it opened,
 * or to the page's heading. Returns the box's keydown handler.
 */
export function useModal(box: RefObject<HTMLDivElement | null>, o: { behind: string; first: string; before: () => HTMLElement | null; onCancel: () => void }): (e: KeyboardEvent) => void {
  useEffect(() => {
    const before = o.before();
    const behind = [...document.querySelectorAll<HTMLElement>(o.behind)];
    for (const el of behind) el.inert = true;
    const first = box.current?.querySelector<HTMLElement>(o.first) ?? box.current?.querySelector<HTMLElement>(FOCUSABLE);
    first?.focus();
    return () => {
      for (const el of behind) el.inert = false;
      // Once the dialog is out of the document and the page is no longer inert.
      setTimeout(() => {
        if (before?.isConnected) before.focus();
        else document.querySelector<HTMLElement>('main h1')?.focus();
      }, 0);
    };
  }, []);
  return (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      o.onCancel();
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
}

/**
 * A modal dialog a page opens (the passkey dialogs): drawn beside the page
 * (so the page can be made inert without it), the focus starts at its first
 * field, and it behaves as every dialog does (useModal).
 */
export function PageDialog({ labelledBy, onCancel, children }: { labelledBy: string; onCancel: () => void; children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  const onKeyDown = useModal(box, {
    behind: 'body > #app > :not(.backdrop)',
    first: 'input, select',
    before: () => (document.activeElement instanceof HTMLElement ? document.activeElement : null),
    onCancel,
  });
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
