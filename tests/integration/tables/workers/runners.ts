/** The marathon record of the partitioning guide, as a multi-index table (shared by the test and its workers). */
import { compositeKey, multiIndexTable, padNumber, type MultiIndexClient } from "../../../../src/tables/index.js";

export interface Runner {
  race: string;
  bib: number;
  name: string;
  gender: string;
  age: number;
  count: number;
  [property: string]: unknown;
}

export const runners = (client: MultiIndexClient) =>
  multiIndexTable<Runner>(client, {
    partitionKey: (r) => compositeKey([r.race, "Full"]),
    indexes: {
      BIB: (r) => compositeKey([padNumber(r.bib, 5), r.name]),
      AGE: (r) => compositeKey([padNumber(r.age, 3), padNumber(r.bib, 5), r.name]),
    },
  });
