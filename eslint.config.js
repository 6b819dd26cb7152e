// ESLint: typescript-eslint's type-aware recommended rules (floating promises, misused promises and
// the like matter in a library of background renewals and polling loops), with formatting left to
// Prettier.
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/dist/",
      "docs/api/",
      "coverage/",
      "node_modules/",
      ".ci/node24/",
      ".tmp/",
      "**/*.cjs",
      "**/*.mjs",
      "*.config.js",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      "@typescript-eslint/only-throw-error": "off", // rethrowing an abort signal's reason is deliberate
      "@typescript-eslint/prefer-promise-reject-errors": "off", // likewise: rejecting with signal.reason
      // An `async` function without `await` is how this code base implements an async interface
      // (idempotency stores, handlers, mutations, test doubles): a throw in it becomes a rejection,
      // as callers expect. Forgotten awaits are caught by no-floating-promises and no-misused-promises.
      "@typescript-eslint/require-await": "off",
    },
  },
  {
    files: ["tests/**/*.ts"],
    rules: {
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/unbound-method": "off",
    },
  },
  prettier,
);
