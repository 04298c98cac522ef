// The daemon's `RequestConfirmation` as the user sees it, for VS Code's modal dialog and the chat
// page's dialog alike: the choices with their labels and the answer each sends. A permission ask
// (`permission` present) offers its `options` (`allow_once`, `allow_always`, `reject_once`,
// `reject_always`) and is answered `{confirmed, option}`; a plugin module's confirmation (a
// `link`, no `permission`) is Confirm or Cancel, answered `{confirmed}`. No `vscode` import.
import type { RequestConfirmationParams, RequestConfirmationResult } from '../protocol';

/** The answers a permission ask offers (PROTOCOL.md, RequestConfirmation). */
export type PermissionOption = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';

export interface ConfirmChoice {
  label: string;
  /** `allow` lets the call go ahead, `reject` does not. */
  kind: 'allow' | 'reject';
  /** What choosing it answers. */
  answer: RequestConfirmationResult;
}

/** The label of one option of a permission ask; `rule` is what "allow always" saves. */
export function optionLabel(option: string, rule: string): string {
  switch (option) {
    case 'allow_once':
      return 'Allow once';
    case 'allow_always':
      return `Always allow (${rule})`;
    case 'reject_once':
      return 'Reject';
    case 'reject_always':
      return 'Always reject in this conversation';
    default:
      // An option a newer daemon offers: shown by its name, still answered with it.
      return option;
  }
}

/** The choices of a confirmation, in the order the daemon lists them. */
export function confirmChoices(request: RequestConfirmationParams): ConfirmChoice[] {
  const permission = request.permission;
  if (permission) {
    return permission.options.map((option) => {
      const kind = option.startsWith('allow') ? 'allow' : 'reject';
      return { label: optionLabel(option, permission.rule), kind, answer: { confirmed: kind === 'allow', option } };
    });
  }
  return [
    { label: 'Confirm', kind: 'allow', answer: { confirmed: true } },
    { label: 'Cancel', kind: 'reject', answer: { confirmed: false } },
  ];
}

/**
 * What closing the dialog without choosing answers: "reject once" when the ask offers it, else
 * a plain no (which the daemon takes as "reject once" too).
 */
export function dismissedAnswer(request: RequestConfirmationParams): RequestConfirmationResult {
  return request.permission?.options.includes('reject_once') ? { confirmed: false, option: 'reject_once' } : { confirmed: false };
}

/** The line under the dialog's text: why a permission asks, or who asks to confirm. */
export function confirmDetail(request: RequestConfirmationParams): string {
  if (request.permission) return `${request.permission.reason} (${request.tool})`;
  return `Asked by the tool ${request.tool}.`;
}
