/** Project memory for people: list, add and remove notes (`lazy memory`). Agents use the MCP tools. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { Memory } from "../../store";
import { LazyError } from "../../util/errors";
import { body } from "./input";

export interface MemoryDeps {
  db: Database;
  /** Memory grew: compact it if it passed its bound (in the background). */
  runner: { memory: { maybe(): Promise<void> } };
}

export function memoryRoutes(d: MemoryDeps) {
  return new Elysia()
    .get("/api/memory", () => ({ notes: Memory.list(d.db), size: Memory.size(d.db) }))
    .post(
      "/api/memory",
      ({ body: { text }, set }) => {
        set.status = 201;
        const note = Memory.add(d.db, text, "human");
        void d.runner.memory.maybe();
        return note;
      },
      body(z.strictObject({ text: z.string() })),
    )
    .delete("/api/memory/:id", ({ params }) => {
      const id = Number(params.id);
      if (!Number.isInteger(id) || id < 1)
        throw new LazyError("invalid_input", `"${params.id}" is not a note number; lazy memory lists them.`);
      return Memory.remove(d.db, id);
    });
}
