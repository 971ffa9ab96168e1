import { describe, expect, it } from 'vitest';

describe('runtime', () => {
  it('runs on the Lambda runtime major version (nodejs24.x), brought in by the project', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});
