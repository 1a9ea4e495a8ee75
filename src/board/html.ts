/**
 * HTML that is safe by construction: the `html` tag escapes every interpolated value unless it is
 * already `SafeHtml`, so a task title typed by a user can never become markup. The same escaping
 * is valid inside SVG text and attribute values, because both are XML.
 */
export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** Attribute values must be quoted in the template; the escaping covers both quote kinds. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/** Markup produced by code, never by users (for example a number formatted with an entity). */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
