/** Body-HMAC senders (first half): one HMAC of the body in a header. */
import type { SenderName } from '../names.js';
import { bodyHmac, randomHex, uuid } from '../sign.js';
import type { SenderRow } from '../types.js';

const repository = {
  id: 1296269,
  node_id: 'MDEwOlJlcG9zaXRvcnkxMjk2MjY5',
  name: 'hello-world',
  full_name: 'octocat/hello-world',
  private: false,
};
const octocat = { login: 'octocat', id: 1, node_id: 'MDQ6VXNlcjE=', type: 'User' };

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'github',
    credential: 'secret',
    newSecret: () => randomHex(40),
    // GitHub's delivery id (X-GitHub-Delivery) is a GUID, unsigned; the event has no id of its own.
    newId: uuid,
    samples: {
      push: ({ seconds, iso }) => ({
        ref: 'refs/heads/main',
        before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
        after: randomHex(40),
        created: false,
        deleted: false,
        forced: false,
        compare: 'https://github.com/octocat/hello-world/compare/6113728f27ae...0d1a26e67d8f',
        commits: [
          {
            id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
            message: 'Update README.md',
            timestamp: iso,
            author: { name: 'Monalisa Octocat', email: 'octocat@github.com', username: 'octocat' },
          },
        ],
        head_commit: {
          id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
          message: 'Update README.md',
          timestamp: iso,
        },
        repository: { ...repository, pushed_at: seconds },
        pusher: { name: 'octocat', email: 'octocat@github.com' },
        sender: octocat,
      }),
      issues: ({ iso }) => ({
        action: 'opened',
        issue: {
          id: Number.parseInt(randomHex(8), 16),
          node_id: `I_kwDO${randomHex(16)}`,
          number: 1347,
          title: 'Found a bug',
          body: "I'm having a problem with this.",
          state: 'open',
          user: octocat,
          created_at: iso,
          updated_at: iso,
        },
        repository,
        sender: octocat,
      }),
      pull_request: ({ iso }) => ({
        action: 'opened',
        number: 2,
        pull_request: {
          id: Number.parseInt(randomHex(8), 16),
          node_id: `PR_kwDO${randomHex(16)}`,
          number: 2,
          state: 'open',
          title: 'Update the README with new information.',
          user: octocat,
          created_at: iso,
          head: { ref: 'changes', sha: randomHex(40) },
          base: { ref: 'main', sha: randomHex(40) },
        },
        repository,
        sender: octocat,
      }),
      ping: () => ({
        zen: 'Design for failure.',
        hook_id: 30,
        hook: { type: 'Repository', id: 30, active: true, events: ['push', 'issues'] },
        repository,
        sender: octocat,
      }),
    },
    sign: bodyHmac({
      header: 'x-hub-signature-256',
      encoding: 'hex',
      prefix: 'sha256=',
      headers: ({ id, type }) => ({
        'x-github-event': type,
        'x-github-delivery': id,
        'x-github-hook-id': '30',
        'user-agent': 'GitHub-Hookshot/044aadd',
      }),
    }),
  },
];
