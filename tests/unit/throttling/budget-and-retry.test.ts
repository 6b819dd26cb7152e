/**
 * The retry budget's arithmetic, and how retry() and the pipeline policy spend from it and credit
 * it; the policy's waits and verdicts on a fake pipeline.
 */
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import {
  AdaptiveRateLimiter,
  classifyError,
  isRetryBudgetExhaustedError,
  noBackoff,
  retry,
  RetryBudget,
  RetryBudgetExhaustedError,
  throttleScopeOf,
  throttlingPolicy,
} from "../../../src/index.js";

const busy = () =>
  Object.assign(new Error("The server is busy."), { name: "RestError", statusCode: 503, code: "ServerBusy" });

describe("RetryBudget", () => {
  it("starts full, spends a token per retry, earns a tenth back per first-try success, and refuses when empty", () => {
    const budget = new RetryBudget({ maxTokens: 3 });
    expect(budget.tokens).toBe(3);
    expect([budget.trySpend(), budget.trySpend(), budget.trySpend(), budget.trySpend()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    for (let i = 0; i < 10; i++) budget.credit();
    expect(budget.tokens).toBeCloseTo(1);
    for (let i = 0; i < 100; i++) budget.credit();
    expect(budget.tokens).toBe(3); // never past maxTokens
  });

  it("throws a typed error that names the failure, the budget and what to do", () => {
    const budget = new RetryBudget({ maxTokens: 0, retryCost: 0, name: "orders" });
    budget.spend(busy()); // a retry costing nothing is always paid
    const refusing = new RetryBudget({ maxTokens: 1, name: "orders" });
    refusing.trySpend();
    let thrown: unknown;
    try {
      refusing.spend(busy(), "write entity 'p/r'");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RetryBudgetExhaustedError);
    expect(thrown).toMatchObject({
      code: "RetryBudgetExhausted",
      statusCode: 503,
      serviceCode: "ServerBusy",
      budget: "orders",
    });
    expect((thrown as Error).message).toMatch(
      /^Could not write entity 'p\/r': the service answered 503 ServerBusy, and the retry budget 'orders' is empty/,
    );
    // Not transient for the one classifier: an outer loop does not retry it either.
    expect(classifyError(thrown).transient).toBe(false);
    expect(isRetryBudgetExhaustedError(thrown)).toBe(true);
  });

  it("rejects impossible settings", () => {
    expect(() => new RetryBudget({ maxTokens: -1 })).toThrow(/`maxTokens` must be at least 0/);
    expect(() => new RetryBudget({ maxTokens: 1, retryCost: 2 })).toThrow(
      /`retryCost` \(2\) must be at most `maxTokens` \(1\)/,
    );
    expect(() => new RetryBudget({ name: "" })).toThrow(/`name`/);
  });
});

describe("retry() with a budget and a rate limiter", () => {
  it("pays each retry from the budget and fails fast, typed, once it is empty", async () => {
    const budget = new RetryBudget({ maxTokens: 2 });
    let calls = 0;
    const failing = () => retry(async () => { calls += 1; throw busy(); }, { budget, maxRetries: 5, backoff: noBackoff() }); // prettier-ignore
    await expect(failing()).rejects.toMatchObject({ code: "RetryBudgetExhausted", statusCode: 503 });
    expect(calls).toBe(3); // the first try, and two paid retries
    calls = 0;
    await expect(failing()).rejects.toBeInstanceOf(RetryBudgetExhaustedError);
    expect(calls).toBe(1); // empty: not retried at all
  });

  it("credits first-try successes only", async () => {
    const budget = new RetryBudget({ maxTokens: 10, successCredit: 1 });
    budget.trySpend();
    budget.trySpend();
    await retry(async () => "ok", { budget });
    expect(budget.tokens).toBe(9);
    let first = true;
    const flaky = async () => {
      if (first) {
        first = false;
        throw busy();
      }
      return "ok";
    };
    await retry(flaky, { budget, backoff: noBackoff() });
    expect(budget.tokens).toBe(8); // one retry paid, no credit for a success after retries
  });

  it("sends every attempt through the limiter under throttleScope, which learns from the answers", async () => {
    const rateLimiter = new AdaptiveRateLimiter();
    const throttleScope = throttleScopeOf("https://acct.queue.core.windows.net/jobs/messages");
    let calls = 0;
    await retry(async () => (++calls === 1 ? Promise.reject(busy()) : "ok"), {
      rateLimiter,
      throttleScope,
      backoff: noBackoff(),
    });
    expect(rateLimiter.stateOf(throttleScope.partition!)).toMatchObject({ limited: true, cuts: 1 });
    expect(() => retry(async () => 1, { rateLimiter })).toThrow(/`rateLimiter` needs `throttleScope`/);
    expect(() => retry(async () => 1, { budget: {} as never })).toThrow(/`budget` must be a RetryBudget/);
  });
});

describe("throttlingPolicy", () => {
  /** A request as the SDK pipeline passes it (the same object on each of its tries). */
  const request = (url: string) => ({ url, method: "PUT", headers: createHttpHeaders(), body: undefined });
  const answer = (status: number, headers: Record<string, string> = {}, bodyAsText?: string) => ({
    status,
    headers: createHttpHeaders(headers),
    bodyAsText,
  });

  it("pays the SDK's retries of one request from the budget and stops them with a typed error", async () => {
    const budget = new RetryBudget({ maxTokens: 1 });
    const policy = throttlingPolicy({ budget });
    const req = request("https://acct.blob.core.windows.net/c/b");
    const busyAnswer = answer(503, { "x-ms-error-code": "ServerBusy" }, "<Error><Code>ServerBusy</Code><Message>The server is busy.</Message></Error>"); // prettier-ignore
    expect((await policy.sendRequest(req, async () => busyAnswer)).status).toBe(503); // first try: free
    expect((await policy.sendRequest(req, async () => busyAnswer)).status).toBe(503); // retry 1: paid
    const error = await policy.sendRequest(req, async () => busyAnswer).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RetryBudgetExhausted", statusCode: 503, serviceCode: "ServerBusy" });
    // A first try that was served earns the credit.
    await policy.sendRequest(request("https://acct.blob.core.windows.net/c/other"), async () => answer(200));
    expect(budget.tokens).toBeCloseTo(0.1);
  });

  it("cuts the partition's rate on a Table 503 read from the JSON body (no x-ms-error-code), and the account's on an account-level one", async () => {
    const rateLimiter = new AdaptiveRateLimiter();
    const policy = throttlingPolicy({ rateLimiter });
    const url = "https://acct.table.core.windows.net/t(PartitionKey='p',RowKey='r')";
    const json = (message: string) => JSON.stringify({ "odata.error": { code: "ServerBusy", message: { lang: "en-US", value: message } } }); // prettier-ignore
    await policy.sendRequest(request(url), async () =>
      answer(503, {}, json("The server is currently unable to receive requests.")),
    );
    const { partition, account } = throttleScopeOf(url);
    expect(rateLimiter.stateOf(partition!)?.limited).toBe(true);
    expect(rateLimiter.stateOf(account)?.limited).toBe(false);
    await policy.sendRequest(request(url), async () =>
      answer(503, {}, json("Operations per second is over the account limit.")),
    );
    expect(rateLimiter.stateOf(account)?.limited).toBe(true);
  });

  it("needs a limiter or a budget, and checks them by what they do", () => {
    expect(() => throttlingPolicy({})).toThrow(/needs a `rateLimiter`, a `budget`, or both/);
    expect(() => throttlingPolicy({ budget: {} as never })).toThrow(/`budget` must be a RetryBudget/);
    expect(() => throttlingPolicy({ budget: new RetryBudget(), service: "dfs" as never })).toThrow(/`service`/);
    expect(throttlingPolicy({ budget: new RetryBudget() }).name).toBe("ascThrottlingPolicy");
  });
});
