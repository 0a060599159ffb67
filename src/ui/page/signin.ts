/** The sign-in form: the API token, checked with svc before it is kept for this tab (api.ts). */
import { ApiError, signIn, token } from "./api.ts";
import { h, replace } from "./dom.ts";
import { messageOf } from "./format.ts";

/** Shows the form in `root`, with `notice` (why the person is asked again) until they sign in. */
export function showSignIn(root: HTMLElement, notice: string | null, onSignedIn: () => void): void {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    required: true,
    spellcheck: "false",
    "aria-describedby": "token-help",
  });
  const error = h("p", { class: "error", role: "alert", id: "signin-error" }, notice ?? "");
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "svc"),
    h("label", { for: "token" }, "API token"),
    input,
    h(
      "p",
      { class: "help", id: "token-help" },
      "The API token: what the file named by http_api.token holds (e.g. cat svc-token), or its value. Kept for this browser tab only.",
    ),
    submit,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = input.value.trim();
    submit.disabled = true;
    replace(error, "");
    try {
      await signIn(candidate);
      token.set(candidate);
      onSignedIn();
    } catch (failure) {
      replace(
        error,
        failure instanceof ApiError && failure.status === 401
          ? "Wrong token: svc refused it. Paste what the file named by http_api.token holds."
          : messageOf(failure),
      );
      input.select();
    } finally {
      submit.disabled = false;
    }
  });
  replace(root, h("main", { class: "signin-page" }, form));
  input.focus();
}
