/**
 * From a stock Debian 12 to a healthy mail host by README's "From the release archive": the daemons
 * from Debian, `wget` the tar.gz and its .sha256, check, unpack, `mailsvc-<v>/bin/mailsvc install`,
 * `mailsvc admin set-password && mailsvc doctor`. The test itself is in test/helpers/first-install.ts,
 * shared with the Debian package's path.
 */
import { describeFirstInstall } from './helpers/first-install.js';

describeFirstInstall('archive');
