/** Docker's X-Registry-Auth payload: what a pull, or a Swarm service's workers, authenticate with. */
export interface RegistryAuth {
  username?: string;
  password?: string;
  identitytoken?: string;
  serveraddress: string;
}
