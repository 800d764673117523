package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/engine"
)

// This file is the repository of approval votes: one row per principal
// and approval with a quorum. Callers hold the approval's run locked
// (runsLockForApproval), so the votes of one approval are cast and
// counted one at a time.

// approvalVoteCast records a vote unless the principal has voted on the
// approval already, and answers with the principal's vote as stored
// (this one, or the earlier one), whether this call inserted it, and how
// many approve votes the approval has now.
const approvalVoteCast = `
WITH cast_vote AS (
    INSERT INTO approval_votes (approval_id, principal_id, resolution, reason, voted_at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (approval_id, principal_id) DO NOTHING
    RETURNING resolution
), vote AS (
    SELECT resolution, true AS inserted FROM cast_vote
    UNION ALL
    SELECT resolution, false FROM approval_votes
     WHERE approval_id = $1 AND principal_id = $2 AND NOT EXISTS (SELECT 1 FROM cast_vote)
)
SELECT vote.resolution, vote.inserted,
       (SELECT count(*) FROM approval_votes v WHERE v.approval_id = $1 AND v.resolution <> 'deny')
       + CASE WHEN vote.inserted AND vote.resolution <> 'deny' THEN 1 ELSE 0 END
  FROM vote`

// approvalVote is a principal's vote as stored after approvalVotesCast.
type approvalVote struct {
	resolution engine.ApprovalResolutionType
	inserted   bool // this call cast it
	approvals  int  // approve votes on the approval, this one included
}

// approvalVotesCast casts principalID's vote on an approval, or finds the
// vote the principal cast before.
func approvalVotesCast(ctx context.Context, db DBTX, approvalID, principalID string, res engine.ApprovalResolutionType, reason string, now time.Time) (approvalVote, error) {
	var v approvalVote
	err := db.QueryRow(ctx, approvalVoteCast, approvalID, principalID, string(res), reason, now).Scan(&v.resolution, &v.inserted, &v.approvals)
	if errors.Is(err, pgx.ErrNoRows) {
		return approvalVote{}, fmt.Errorf("cast vote: the vote is neither new nor stored: %w", ErrConflict)
	}
	if err != nil {
		return approvalVote{}, fmt.Errorf("cast vote: %w", err)
	}
	return v, nil
}
