/**
 * A process that starts Azurite (on disk) and then waits to be killed, for the test that Azurite and
 * its data folder do not outlive their owner. Prints {"blobEndpoint":…,"location":…}.
 */
import { startAzurite } from "../../../../src/testing/index.js";

const azurite = await startAzurite();
console.log(JSON.stringify({ blobEndpoint: azurite.blobEndpoint, location: azurite.location }));
setInterval(() => undefined, 60_000); // held until killed
