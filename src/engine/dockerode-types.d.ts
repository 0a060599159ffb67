/**
 * What @types/dockerode leaves out of the calls svc makes: dockerode passes these options on to
 * the engine (and the abort signal to the modem), its types just do not list them.
 */
import "dockerode";

declare module "dockerode" {
  interface NetworkConnectOptions {
    abortSignal?: AbortSignal;
  }
  interface ContainerCreateOptions {
    /** the query of POST /containers/create (name, platform), kept apart from the body */
    _query?: Record<string, string>;
    /** the body of POST /containers/create exactly as built */
    _body?: Record<string, unknown>;
  }
}
