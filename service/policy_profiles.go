package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// policyProfileInsert records a loaded ruleset for audit. The row keeps the
// first load (loaded_at, loaded_by) of those bytes; every later load is in
// its policy.profile.loaded event only.
const policyProfileInsert = `
INSERT INTO policy_profiles (policy_version, profile_name, profile_sha256, hardline_sha256, rule_count, loaded_at, loaded_by)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (policy_version) DO NOTHING`

// policyProfilesInsert records rs as loaded by loadedBy at now, unless its
// bytes were recorded before.
func policyProfilesInsert(ctx context.Context, db DBTX, rs *engine.LoadedRuleset, now time.Time, loadedBy string) error {
	_, err := db.Exec(ctx, policyProfileInsert, rs.PolicyVersion(), rs.ProfileName(),
		rs.ProfileSHA256(), rs.HardlineSHA256(), rs.RuleCount(), now, loadedBy)
	return err
}

// recordProfiles writes a policy_profiles row (first load only) and a
// policy.profile.loaded event per ruleset, in one transaction, unless the
// configuration says this process is not a server.
func (s *Service) recordProfiles(ctx context.Context) error {
	if s.cfg.SkipProfileAudit {
		return nil
	}
	names := s.cfg.Policy.Profiles()
	now := s.now()
	err := s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		for _, name := range names {
			rs, _ := s.cfg.Policy.Ruleset(name)
			if err := policyProfilesInsert(ctx, tx, rs, now, s.cfg.ReplicaID); err != nil {
				return fmt.Errorf("record profile %s: %w", name, err)
			}
			if err := insertEvent(ctx, tx, SystemTenant, "", now, api.PolicyProfileLoadedPayload{
				PolicyVersion: rs.PolicyVersion(),
				Profile:       rs.ProfileName(),
				LoadedBy:      s.cfg.ReplicaID,
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("service: record policy profiles: %w", err)
	}
	return nil
}
