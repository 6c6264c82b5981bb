// A small helper to build elements: attributes and children in one call, text always as text
// (never parsed as HTML), so nothing a server sends can inject markup.

type Child = Node | string | false | null | undefined;
type Attributes = Record<string, string | number | boolean | undefined | EventListener>;

export function h(tag: string, attributes: Attributes = {}, ...children: (Child | Child[])[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== false && child !== null && child !== undefined) element.append(child);
  }
  return element;
}
