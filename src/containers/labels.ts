/**
 * The labels on every container and network lazy makes: its project (and task, and the
 * project's root), so a restarted daemon finds again what it started.
 */
export const LABEL_PROJECT = "dev.lazy.project";
export const LABEL_TASK = "dev.lazy.task";
export const LABEL_ROOT = "dev.lazy.root";
/** On a project image: the stamp of the build context it was built from (image.ts contextStamp). */
export const LABEL_CONTEXT = "dev.lazy.context";
/** On every image lazy builds (image-build.ts): `lazy prune` removes only images that carry it. */
export const LABEL_IMAGE = "dev.lazy.image";
