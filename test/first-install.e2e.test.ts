/**
 * From a stock Debian 12 to a healthy mail host by README's three commands: the Debian package
 * (`wget` the .deb, `apt-get install -y ./…deb`, `mailsvc admin set-password && mailsvc doctor`).
 * The test itself is in test/helpers/first-install.ts, shared with the release archive's path.
 */
import { describeFirstInstall } from './helpers/first-install.js';

describeFirstInstall('deb');
