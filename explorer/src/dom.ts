// Building DOM and SVG elements without a framework: the page is a few views redrawn on navigation, which plain
// elements handle, and the bundle stays small. Text always goes in as text nodes (never as HTML), so names and
// comments from the chain cannot inject markup.

export type Child = Node | string | undefined | null | false;

interface Props {
  class?: string;
  text?: string;
  title?: string;
  attrs?: Record<string, string | number | undefined>;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

function append(parent: Element, children: Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

function apply(element: Element, props: Props): void {
  if (props.class !== undefined) element.setAttribute("class", props.class);
  if (props.text !== undefined) element.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) if (value !== undefined) element.setAttribute(name, String(value));
  for (const [type, listener] of Object.entries(props.on ?? {})) element.addEventListener(type, listener as EventListener);
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  apply(element, props);
  if (props.title !== undefined) element.title = props.title;
  append(element, children);
  return element;
}

const svgNamespace = "http://www.w3.org/2000/svg";

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(svgNamespace, tag) as SVGElementTagNameMap[K];
  apply(element, props);
  // An SVG element's tooltip is a <title> child.
  if (props.title !== undefined) element.append(svg("title", { text: props.title }));
  append(element, children);
  return element;
}
