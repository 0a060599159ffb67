/**
 * The svc dashboard (docs/dashboard.md): one more client of the HTTP API. It signs in with the
 * API token, lists what svc watches with what is newer, follows a running cycle, and acts
 * through the same endpoints a curl command would. Every value from svc (and so from an engine
 * or a registry) reaches the DOM as text (dom.ts). This file only starts the page and moves
 * between sign-in and the dashboard; what each file holds: README.md of this folder.
 */
import { session, token, whenUnauthorized } from "./api.ts";
import { showDashboard } from "./dashboard.ts";
import { stopPolling } from "./polling.ts";
import { showSignIn } from "./signin.ts";
import { state } from "./store.ts";

const root = document.getElementById("app")!;
/** why the person is asked to sign in again, shown on the form */
let signInNotice: string | null = null;

function toSignIn(): void {
  stopPolling();
  showSignIn(root, signInNotice, () => ((signInNotice = null), toDashboard()));
}

function toDashboard(): void {
  showDashboard(root, toSignIn);
}

whenUnauthorized(() => {
  token.clear();
  state.proxy = false;
  signInNotice = "svc refused the token (it may have changed): sign in again.";
  toSignIn();
});

/** With a token kept for this tab, the dashboard; without, an identity proxy in front may have signed the person in. */
async function start(): Promise<void> {
  if (token.get()) return toDashboard();
  try {
    state.session = await session(true);
    state.proxy = true;
    toDashboard();
  } catch {
    toSignIn();
  }
}

void start();
