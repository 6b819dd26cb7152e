/** The command line tool's subcommands. Each capability adds its own here. */
import type { Command } from "../command.js";
import { benchCommand } from "./bench.js";
import { lockCommand } from "./lock.js";
import { semaphoreCommand } from "./semaphore.js";
import { stressCommand } from "./stress.js";

export const commands: readonly Command[] = [lockCommand, semaphoreCommand, stressCommand, benchCommand];
