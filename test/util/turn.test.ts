/** Work put off to the end of the event loop's turn runs there, together, in order, whatever one of them throws. */
import { expect, test } from "bun:test";
import { atEndOfTurn, endOfTurn } from "../../src/util/turn";

test("callbacks run after the current turn, in the order given, past one that throws", async () => {
  const ran: string[] = [];
  atEndOfTurn(() => ran.push("first"));
  atEndOfTurn(() => {
    throw new Error("a broken write");
  });
  atEndOfTurn(() => ran.push("third"));
  await Promise.resolve(); // microtasks of this turn come first
  expect(ran).toEqual([]);
  await endOfTurn();
  expect(ran).toEqual(["first", "third"]);
  // A later turn starts a new batch.
  atEndOfTurn(() => ran.push("next turn"));
  await endOfTurn();
  expect(ran).toEqual(["first", "third", "next turn"]);
});
