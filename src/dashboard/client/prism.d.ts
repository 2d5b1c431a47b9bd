/** What lazy uses of Prism (prismjs ships no types): its tokenizer and grammars, never its HTML. */
declare module "prismjs/components/prism-core" {
  export interface Token {
    type: string;
    alias?: string | string[];
    content: string | Token | (string | Token)[];
  }
  export type Grammar = Record<string, unknown>;
  const Prism: {
    languages: Record<string, Grammar | undefined>;
    tokenize(text: string, grammar: Grammar): (string | Token)[];
  };
  export default Prism;
}
declare module "prismjs/components/*";
