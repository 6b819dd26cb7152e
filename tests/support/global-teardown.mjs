export default async function globalTeardown() {
  await globalThis.__ASC_AZURITE__?.stop();
}
