/** Where the console is served, on the gateway's base URL and on its own listener. */
export const BASE = '/console'
