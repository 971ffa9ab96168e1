import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order of the parallel tiers' files (docs/testing.md, "How `npm test` runs"): the sweeps first, then the api
 * tier, then the unit tier, each tier's files in vitest's own order (the longest of the last run first, else the
 * largest). Vitest runs a group's projects by name (api, system-sweeps, unit): the sweeps, the longest files of
 * the run (20-70 s each), ran last, and the run ended with one of them on one worker while the other had nothing
 * left. Run first, the last minutes are the api and unit tiers' short files, which keep both workers busy to the end.
 */
const TIER_ORDER = ['system-sweeps', 'api', 'unit'];

const rank = (file: TestSpecification) => {
  const at = TIER_ORDER.indexOf(file.project.name);
  return at < 0 ? TIER_ORDER.length : at;
};

export class LongestTiersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array sort is stable: within a tier, the base order stays.
    return (await super.sort(files)).sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b),
    );
  }
}
