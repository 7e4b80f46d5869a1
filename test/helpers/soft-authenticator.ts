import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';

/**
 * A software WebAuthn authenticator for tests that need an answer to a
 * challenge the server has just made (the recorded ceremonies in
 * test/fixtures/webauthn answer fixed challenges only): an Ed25519 key
 * (COSE alg -8, as Chromium's virtual authenticator makes), attestation
 * `none`, user presence and user verification set, a counter that moves on
 * every assertion. The server checks its answers with @simplewebauthn/server,
 * as it does a browser's.
 */
export class SoftAuthenticator {
  private readonly key: { privateKey: KeyObject; publicKey: KeyObject } = generateKeyPairSync('ed25519');
  readonly credentialId = randomBytes(32).toString('base64url');
  private counter = 0;
  /** The user handle given at registration (passwordless answers it). */
  private userHandle: string | undefined;

  constructor(private readonly origin: string) {}

  private rpIdHash(rpId: string): Buffer {
    return createHash('sha256').update(rpId).digest();
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }));
  }

  /** The answer navigator.credentials.create() would give to these creation options. */
  register(options: Record<string, unknown>): RegistrationResponseJSON {
    const o = options as { challenge: string; rp: { id: string }; user: { id: string } };
    this.userHandle = o.user.id;
    const x = Buffer.from(String(this.key.publicKey.export({ format: 'jwk' }).x), 'base64url');
    const cose = isoCBOR.encode(new Map<number, number | Uint8Array>([[1, 1], [3, -8], [-1, 6], [-2, new Uint8Array(x)]]));
    const id = Buffer.from(this.credentialId, 'base64url');
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    // Flags: user present, user verified, attested credential data.
    const authData = Buffer.concat([this.rpIdHash(o.rp.id), Buffer.from([0x45]), Buffer.alloc(4), Buffer.alloc(16), idLength, id, Buffer.from(cose)]);
    const statement: Map<string, string> = new Map();
    const attestation = isoCBOR.encode(new Map<string, string | Map<string, string> | Uint8Array>([['fmt', 'none'], ['attStmt', statement], ['authData', new Uint8Array(authData)]]));
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      response: {
        clientDataJSON: this.clientData('webauthn.create', o.challenge).toString('base64url'),
        attestationObject: Buffer.from(attestation).toString('base64url'),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** The answer navigator.credentials.get() would give to these request options. */
  assert(options: Record<string, unknown>): AuthenticationResponseJSON {
    const o = options as { challenge: string; rpId: string };
    this.counter += 1;
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    const authData = Buffer.concat([this.rpIdHash(o.rpId), Buffer.from([0x05]), count]);
    const clientData = this.clientData('webauthn.get', o.challenge);
    const signature = sign(null, Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), this.key.privateKey);
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      response: {
        clientDataJSON: clientData.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        ...(this.userHandle === undefined ? {} : { userHandle: this.userHandle }),
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
