// The authorization server of the auth tests: panva's certified OpenID Provider (npm `oidc-provider`,
// installed by `.ci/third_party`), configured here and nothing more. Its JWT access tokens carry the
// `resource` a client asked for (RFC 8707) as their `aud`; client_credentials, dynamic client
// registration and its development sign-in and consent pages (any name and password) are on.
//
// node oidc_provider.mjs MODULE PORT KEYS_JSON
//   MODULE: the path of oidc-provider's lib/index.js; KEYS_JSON: a file of {"keys": [private JWK]}.
// Clients: `ci` (tools:call tools:read), `reader` (tools:read), `brief` (tokens valid one second).
// It prints "ready" on standard output once it listens on 127.0.0.1:PORT.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [modulePath, port, keysPath] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(modulePath).href);
const issuer = `http://127.0.0.1:${port}`;
const scopes = ['tools:call', 'tools:read'];
const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret-0123456789abcdef`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
});

const provider = new Provider(issuer, {
  clients: [client('ci', 'tools:call tools:read'), client('reader', 'tools:read'), client('brief', 'tools:call tools:read')],
  jwks: JSON.parse(readFileSync(keysPath, 'utf8')),
  scopes: ['openid', ...scopes],
  features: {
    clientCredentials: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, forClient) => ({
        scope: scopes.join(' '),
        audience: resource,
        accessTokenTTL: forClient.clientId === 'brief' ? 1 : 300,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1', () => console.log('ready'));
