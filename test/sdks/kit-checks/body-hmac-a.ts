import { hmacValidator as HmacValidator, type Types } from '@adyen/api-library';
import type { Checks } from './types.js';

const adyenValidator = new HmacValidator();

type Notification = {
  notificationItems: { NotificationRequestItem: Types.notification.NotificationRequestItem }[];
};

// GitHub: none. Its verifier, @octokit/webhooks-methods (in the root workspace, not here), verifies
// asynchronously only; these checks are synchronous. test/providers/github.test.ts signs with it.
export const checks: Checks = {
  adyen: {
    sdk: '@adyen/api-library HmacValidator.validateHMAC (each item)',
    verify: (d, secret) => {
      const { notificationItems } = JSON.parse(d.text) as Notification;
      if (notificationItems.length === 0) return false;
      return notificationItems.every(({ NotificationRequestItem: item }) =>
        adyenValidator.validateHMAC(item, secret),
      );
    },
  },
};
