/**
 * A yes/no question before something that cannot be undone (lazy reject deletes a branch): on a
 * terminal a y/N prompt (anything but y or yes is no); without one the command cannot ask, so it
 * refuses and says to pass --yes, rather than deciding for the person.
 */
import { LazyError } from "../util/errors";
import { err } from "./out";

export async function confirm(question: string, flag = "--yes"): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new LazyError("invalid_input", `${question.replace(/\?$/, "")}: lazy cannot ask without a terminal; pass ${flag} to go ahead.`);
  err(`${question} [y/N] `);
  const answer = await new Promise<string>((resolve) => {
    let buf = "";
    const onData = (chunk: Buffer) => {
      buf += chunk.toString("utf8");
      const nl = buf.indexOf("\n");
      if (nl < 0 && buf.length < 256) return;
      process.stdin.off("data", onData);
      process.stdin.off("end", onEnd);
      process.stdin.pause();
      resolve(buf.slice(0, nl < 0 ? undefined : nl));
    };
    const onEnd = () => resolve(buf);
    process.stdin.on("data", onData);
    process.stdin.once("end", onEnd);
    process.stdin.resume();
  });
  return /^\s*y(es)?\s*$/i.test(answer);
}
