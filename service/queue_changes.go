package service

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// QueueChanges is what the console's live queue needs after a cursor: the
// approvals requested or resolved since, once each in event order, the
// cursor to poll from next, and the pending count (exact up to a page,
// More beyond).
type QueueChanges struct {
	Approvals []api.Approval
	Cursor    string
	Pending   int
	More      bool
}

// QueueChangesSince reads up to limit events after cursor and the
// approvals they requested or resolved. It costs two round trips whatever
// the number of changed approvals: the events page, then one batch of the
// approvals by id and the pending count. An approval the events name but
// the tenant no longer has is left out.
func (s *Service) QueueChangesSince(ctx context.Context, p engine.Principal, cursor string, limit, pageSize int) (QueueChanges, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return QueueChanges{}, fmt.Errorf("service: queue changes: %w", err)
	}
	evs, err := s.ListEvents(ctx, p, EventFilter{After: cursor, Limit: limit})
	if err != nil {
		return QueueChanges{}, err
	}
	out := QueueChanges{Cursor: cursor}
	if len(evs) == 0 {
		return out, nil
	}
	out.Cursor = evs[len(evs)-1].Cursor
	ids := changedApprovalIDs(evs)
	if len(ids) == 0 {
		return out, nil
	}
	var b pgx.Batch
	var rows []approvalRow
	queueApprovalsListByIDs(&b, p.TenantID, ids, &rows)
	queueApprovalsCountPending(&b, p.TenantID, pageSize+1, &out.Pending)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return QueueChanges{}, fmt.Errorf("service: queue changes: %w", err)
	}
	byID := make(map[string]api.Approval, len(rows))
	for _, r := range rows {
		byID[r.ID] = r.Approval
	}
	for _, id := range ids {
		if a, ok := byID[id]; ok {
			out.Approvals = append(out.Approvals, a)
		}
	}
	if out.Pending > pageSize {
		out.Pending, out.More = pageSize, true
	}
	return out, nil
}

// changedApprovalIDs lists, once each and in order, the approvals that the
// events requested, voted on or resolved.
func changedApprovalIDs(evs []api.Event) []string {
	seen := map[string]bool{}
	var ids []string
	for _, e := range evs {
		var id string
		switch p, _ := e.DecodePayload(); p := p.(type) {
		case api.ApprovalRequestedPayload:
			id = p.ApprovalID
		case api.ApprovalResolvedPayload:
			id = p.ApprovalID
		case api.ApprovalVotedPayload:
			id = p.ApprovalID
		}
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}
