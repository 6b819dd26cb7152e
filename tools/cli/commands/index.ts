/** The command line tool's subcommands. Each capability adds its own here. */
import type { Command } from "../command.js";
import { benchCommand } from "./bench.js";
import { lockCommand } from "./lock.js";
import { stressCommand } from "./stress.js";

export const commands: readonly Command[] = [lockCommand, stressCommand, benchCommand];
