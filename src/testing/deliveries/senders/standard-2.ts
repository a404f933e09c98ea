/**
 * The token senders (GitLab, Postmark, Telegram, Okta): no signature, a shared token sent as it
 * is, in a header or as basic auth; the kit sends what the sender sends. Twilio's URL + form HMAC
 * is in standard-3.ts.
 */
import { randomBytes } from 'node:crypto';
import type { SenderName } from '../names.js';
import { randomHex, uuid } from '../sign.js';
import type { HandshakeContext, HandshakeParts, SampleContext, SenderRow } from '../types.js';
import { rows as twilio } from './standard-3.js';

/** A token as the senders' settings take one: 32 characters of A-Z a-z 0-9 _ - (Telegram's alphabet). */
const token = () => randomBytes(24).toString('base64url');

const GITLAB = 'https://gitlab.example.com';
const gitlabProject = {
  id: 15,
  name: 'Diaspora',
  description: 'A distributed social network',
  web_url: `${GITLAB}/mike/diaspora`,
  avatar_url: null,
  git_ssh_url: 'git@gitlab.example.com:mike/diaspora.git',
  git_http_url: `${GITLAB}/mike/diaspora.git`,
  namespace: 'Mike',
  visibility_level: 0,
  path_with_namespace: 'mike/diaspora',
  default_branch: 'main',
  homepage: `${GITLAB}/mike/diaspora`,
  url: 'git@gitlab.example.com:mike/diaspora.git',
  ssh_url: 'git@gitlab.example.com:mike/diaspora.git',
  http_url: `${GITLAB}/mike/diaspora.git`,
};
const gitlabUser = {
  id: 1,
  name: 'Administrator',
  username: 'root',
  avatar_url: 'https://www.gravatar.com/avatar/e64c7d89f26bd1972efa854d13d7dd61?s=80&d=identicon',
  email: '[REDACTED]',
};
const gitlabCommit = (iso: string) => {
  const id = randomHex(40);
  return {
    id,
    message: 'Update Catalan translation to e38cb41.\n',
    title: 'Update Catalan translation to e38cb41.',
    timestamp: iso,
    url: `${GITLAB}/mike/diaspora/-/commit/${id}`,
    author: { name: 'Jordi Mallach', email: 'jordi@softcatala.org' },
  };
};

/** The `repository` of merge request and issue events (push events carry a longer one). */
const gitlabRepository = {
  name: 'Diaspora',
  url: gitlabProject.url,
  description: '',
  homepage: gitlabProject.homepage,
};

/** A time as GitLab writes it in merge request, issue and pipeline events: `2026-12-04 14:48:06 UTC`. */
const gitlabTime = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

const postmarkClient = {
  Client: { Name: 'Chrome 120.0.6099.109', Company: 'Google', Family: 'Chrome' },
  OS: { Name: 'OS X 10.15 Catalina', Company: 'Apple Computer, Inc.', Family: 'OS X 10' },
  Platform: 'Desktop',
  UserAgent:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  Geo: {
    CountryISOCode: 'RS',
    Country: 'Serbia',
    RegionISOCode: 'VO',
    Region: 'Autonomna Pokrajina Vojvodina',
    City: 'Novi Sad',
    Zip: '21000',
    Coords: '45.2517,19.8369',
    IP: '188.2.95.4',
  },
};

const telegramUser = {
  id: 1111111,
  is_bot: false,
  first_name: 'Test',
  last_name: 'Lastname',
  username: 'Test',
  language_code: 'en',
};
const telegramChat = {
  id: 1111111,
  first_name: 'Test',
  last_name: 'Lastname',
  username: 'Test',
  type: 'private',
};
/** The update id Telegram numbers its updates with (the kit's `id`, digits). */
const updateId = (id: string) => Number.parseInt(id, 10);

const OKTA = 'https://example.okta.com';
/** An Okta event hook delivery: one System Log event (its `uuid` the kit's id) in `data.events`. */
function oktaDelivery(iso: string, event: Record<string, unknown>) {
  return {
    eventType: 'com.okta.event_hook',
    eventTypeVersion: '1.0',
    cloudEventsVersion: '0.1',
    source: `${OKTA}/api/v1/eventHooks/who8tcaq4ghXBJBa80g7`,
    eventId: uuid(),
    data: { events: [event] },
    eventTime: iso,
    contentType: 'application/json',
  };
}
/** A System Log event as event hooks carry it. */
const oktaEvent = (id: string, iso: string, eventType: string, displayMessage: string, target: unknown) => ({
  uuid: id,
  published: iso,
  eventType,
  version: '0',
  displayMessage,
  severity: 'INFO',
  client: {
    userAgent: {
      rawUserAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36',
      os: 'Mac OS X',
      browser: 'CHROME',
    },
    zone: 'null',
    device: 'Computer',
    id: null,
    ipAddress: '203.0.113.7',
    geographicalContext: { city: 'Paris', state: 'Ile-de-France', country: 'France', postalCode: '75001' },
  },
  device: null,
  actor: {
    id: '00u1qw1mqitPHM8AJ0g7',
    type: 'User',
    alternateId: 'admin@example.com',
    displayName: 'Jane Admin',
    detailEntry: null,
  },
  outcome: { result: 'SUCCESS', reason: null },
  target,
  transaction: { type: 'WEB', id: `Y${randomHex(26)}`, detail: {} },
  debugContext: { debugData: { requestUri: '/api/v1/authn', url: '/api/v1/authn?' } },
  legacyEventType: null,
  authenticationContext: {
    authenticationProvider: null,
    credentialProvider: null,
    credentialType: null,
    issuer: null,
    interface: null,
    authenticationStep: 0,
    externalSessionId: `102${randomHex(22)}`,
  },
  securityContext: { asNumber: null, asOrg: null, isp: null, domain: null, isProxy: null },
  insertionTimestamp: null,
});
/** An Okta sample: one System Log event of the sample's type, about `target`, in a hook delivery. */
const oktaSample =
  (displayMessage: string, target: unknown) =>
  ({ id, iso, type }: SampleContext) =>
    oktaDelivery(iso, oktaEvent(id, iso, type, displayMessage, target));
const oktaUser = {
  id: '00u1qw1mqitPHM8AJ0g7',
  type: 'User',
  alternateId: 'jane.doe@example.com',
  displayName: 'Jane Doe',
  detailEntry: null,
};

/**
 * Okta's one-time verification: a GET carrying the hook's authentication header, like every
 * delivery, and `X-Okta-Verification-Challenge`; the endpoint answers `{ "verification": <challenge> }`.
 */
function oktaHandshake(ctx: HandshakeContext): HandshakeParts {
  if (ctx.secret === '') {
    throw new TypeError(
      "onceonly/testing: okta's verification carries the hook's authentication secret: pass secret",
    );
  }
  return {
    method: 'GET',
    headers: { authorization: ctx.secret, 'x-okta-verification-challenge': ctx.challenge },
    challenge: ctx.challenge,
  };
}

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    // GitLab: the secret token as it is in X-Gitlab-Token, the event name in X-Gitlab-Event; nothing
    // is signed. The kit's id is X-Gitlab-Event-UUID.
    name: 'gitlab',
    signsBody: false,
    credential: 'secret',
    newSecret: token,
    newId: uuid,
    samples: {
      'Push Hook': ({ iso }) => {
        const commit = gitlabCommit(iso);
        return {
          object_kind: 'push',
          event_name: 'push',
          before: randomHex(40),
          after: commit.id,
          ref: 'refs/heads/main',
          ref_protected: true,
          checkout_sha: commit.id,
          user_id: 4,
          user_name: 'John Smith',
          user_username: 'jsmith',
          user_email: 'john@example.com',
          user_avatar: 'https://s.gravatar.com/avatar/d4c74594d841139328695756648b6bd6?s=80',
          project_id: gitlabProject.id,
          project: gitlabProject,
          repository: {
            name: 'Diaspora',
            url: gitlabProject.url,
            description: gitlabProject.description,
            homepage: gitlabProject.homepage,
            git_http_url: gitlabProject.git_http_url,
            git_ssh_url: gitlabProject.git_ssh_url,
            visibility_level: 0,
          },
          commits: [
            { ...commit, added: ['CHANGELOG'], modified: ['app/controller/application.rb'], removed: [] },
          ],
          total_commits_count: 1,
        };
      },
      'Merge Request Hook': ({ iso }) => ({
        object_kind: 'merge_request',
        event_type: 'merge_request',
        user: gitlabUser,
        project: gitlabProject,
        repository: gitlabRepository,
        object_attributes: {
          id: 99,
          iid: 1,
          target_branch: 'main',
          source_branch: 'ms-viewport',
          source_project_id: gitlabProject.id,
          author_id: 51,
          title: 'MS-Viewport',
          created_at: gitlabTime(iso),
          updated_at: gitlabTime(iso),
          state: 'opened',
          draft: false,
          merge_status: 'unchecked',
          detailed_merge_status: 'checking',
          target_project_id: gitlabProject.id,
          description: '',
          url: `${GITLAB}/mike/diaspora/-/merge_requests/1`,
          last_commit: gitlabCommit(iso),
          action: 'open',
        },
        labels: [],
        changes: {},
        assignees: [],
        reviewers: [],
      }),
      'Issue Hook': ({ iso }) => ({
        object_kind: 'issue',
        event_type: 'issue',
        user: gitlabUser,
        project: gitlabProject,
        object_attributes: {
          id: 301,
          iid: 23,
          title: 'New API: create/update/delete file',
          description: 'Create new API for manipulations with repository',
          author_id: 51,
          project_id: gitlabProject.id,
          created_at: gitlabTime(iso),
          updated_at: gitlabTime(iso),
          state: 'opened',
          confidential: false,
          url: `${GITLAB}/mike/diaspora/-/issues/23`,
          action: 'open',
          labels: [],
        },
        repository: gitlabRepository,
        assignees: [],
        labels: [],
        changes: {},
      }),
      'Pipeline Hook': ({ iso }) => {
        const commit = gitlabCommit(iso);
        return {
          object_kind: 'pipeline',
          object_attributes: {
            id: Number.parseInt(randomHex(6), 16),
            iid: 12,
            name: null,
            ref: 'main',
            tag: false,
            sha: commit.id,
            before_sha: randomHex(40),
            source: 'push',
            status: 'success',
            detailed_status: 'passed',
            stages: ['build', 'test', 'deploy'],
            created_at: gitlabTime(iso),
            finished_at: gitlabTime(iso),
            duration: 63,
            queued_duration: 2,
            variables: [],
            url: `${GITLAB}/mike/diaspora/-/pipelines/31`,
          },
          merge_request: null,
          user: gitlabUser,
          project: gitlabProject,
          commit,
          builds: [],
        };
      },
    },
    sign: (ctx) => ({
      headers: {
        'user-agent': 'GitLab/18.6.0',
        'x-gitlab-event': ctx.type,
        'x-gitlab-event-uuid': ctx.id,
        'x-gitlab-webhook-uuid': uuid(),
        'idempotency-key': uuid(),
        'x-gitlab-instance': GITLAB,
        'x-gitlab-token': ctx.secret,
      },
    }),
  },
  {
    // Postmark: basic auth credentials put in the webhook URL (`https://user:password@...`), sent
    // as `Authorization: Basic`; the secret is `user:password`. The kit's id is the MessageID.
    name: 'postmark',
    signsBody: false,
    credential: 'secret',
    newSecret: () => `postmark:${token()}`,
    newId: uuid,
    samples: {
      Delivery: ({ id, iso }) => ({
        RecordType: 'Delivery',
        ServerID: 23,
        MessageStream: 'outbound',
        MessageID: id,
        Recipient: 'john@example.com',
        Tag: 'welcome-email',
        DeliveredAt: iso,
        Details: 'Test delivery webhook details',
        Metadata: { example: 'value', example_2: 'value' },
      }),
      Bounce: ({ id, iso }) => ({
        RecordType: 'Bounce',
        MessageStream: 'outbound',
        ID: Number.parseInt(randomHex(12), 16),
        Type: 'HardBounce',
        TypeCode: 1,
        Name: 'Hard bounce',
        Tag: 'Test',
        MessageID: id,
        Metadata: { a_key: 'a_value', b_key: 'b_value' },
        ServerID: 23,
        Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
        Details: 'Test bounce details',
        Email: 'john@example.com',
        From: 'sender@example.com',
        BouncedAt: iso,
        DumpAvailable: true,
        Inactive: true,
        CanActivate: true,
        Subject: 'Test subject',
        Content: 'Return-Path: <>\r\nDate: ...',
      }),
      Open: ({ id, iso }) => ({
        RecordType: 'Open',
        MessageStream: 'outbound',
        FirstOpen: true,
        ...postmarkClient,
        ReadSeconds: 5,
        MessageID: id,
        Metadata: { example: 'value' },
        ReceivedAt: iso,
        Tag: 'welcome-email',
        Recipient: 'john@example.com',
      }),
      Click: ({ id, iso }) => ({
        RecordType: 'Click',
        MessageStream: 'outbound',
        ClickLocation: 'HTML',
        ...postmarkClient,
        OriginalLink: 'https://example.com',
        MessageID: id,
        Metadata: { example: 'value' },
        ReceivedAt: iso,
        Tag: 'welcome-email',
        Recipient: 'john@example.com',
      }),
    },
    sign: (ctx) => ({
      headers: {
        'user-agent': 'Postmark',
        authorization: `Basic ${Buffer.from(ctx.secret, 'utf8').toString('base64')}`,
      },
    }),
  },
  {
    // Telegram: the secret_token given to setWebhook, as it is in X-Telegram-Bot-Api-Secret-Token.
    // The kit's id is the update_id (digits).
    name: 'telegram',
    signsBody: false,
    credential: 'secret',
    newSecret: token,
    newId: () => String(100_000_000 + Math.floor(Math.random() * 800_000_000)),
    samples: {
      message: ({ id, seconds }) => ({
        update_id: updateId(id),
        message: { message_id: 1365, from: telegramUser, chat: telegramChat, date: seconds, text: '/start' },
      }),
      edited_message: ({ id, seconds }) => ({
        update_id: updateId(id),
        edited_message: {
          message_id: 1365,
          from: telegramUser,
          chat: telegramChat,
          date: seconds - 60,
          edit_date: seconds,
          text: 'Edited text',
        },
      }),
      callback_query: ({ id, seconds }) => ({
        update_id: updateId(id),
        callback_query: {
          id: String(Number.parseInt(randomHex(12), 16)),
          from: telegramUser,
          message: {
            message_id: 1366,
            from: telegramUser,
            chat: telegramChat,
            date: seconds,
            text: 'Choose',
          },
          chat_instance: '-8459176541285301234',
          data: 'Data from button callback',
        },
      }),
      my_chat_member: ({ id, seconds }) => ({
        update_id: updateId(id),
        my_chat_member: {
          chat: telegramChat,
          from: telegramUser,
          date: seconds,
          old_chat_member: { user: { id: 7000000001, is_bot: true, first_name: 'Bot' }, status: 'member' },
          new_chat_member: {
            user: { id: 7000000001, is_bot: true, first_name: 'Bot' },
            status: 'kicked',
            until_date: 0,
          },
        },
      }),
    },
    sign: (ctx) => ({ headers: { 'x-telegram-bot-api-secret-token': ctx.secret } }),
  },
  {
    // Okta event hooks: the authentication secret as it is in the Authorization header (the
    // hook's default "Authentication field"); one System Log event per sample, its uuid the id.
    name: 'okta',
    signsBody: false,
    credential: 'secret',
    newSecret: token,
    newId: uuid,
    samples: {
      'user.session.start': oktaSample('User login to Okta', null),
      'user.lifecycle.create': oktaSample('Create Okta user', [oktaUser]),
      'user.lifecycle.deactivate': oktaSample('Deactivate Okta user', [oktaUser]),
      'group.user_membership.add': oktaSample('Add user to group membership', [
        oktaUser,
        { id: '00g1emaKYZTWRYYRRTSK', type: 'UserGroup', alternateId: 'unknown', displayName: 'Engineering' },
      ]),
    },
    sign: (ctx) => ({ headers: { authorization: ctx.secret } }),
    handshake: oktaHandshake,
  },
  ...twilio,
];
