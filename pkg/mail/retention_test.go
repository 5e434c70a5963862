package mail_test

import (
	"context"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/mail"
)

// Only messages sent before the cut go, more than one batch of them;
// failed, pending and recently sent ones stay.
func TestPruneDeletesOnlyOldSentMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	// 1,500 old sent messages (more than one DELETE's batch), one sent
	// yesterday, one failed long ago, one pending since long ago.
	_, err := pool.Exec(ctx, `
		INSERT INTO mail.outbox (id, kind, to_address, subject, text_body, created_at, sent_at)
		SELECT gen_random_uuid(), 'receipt', 'old@example.org', 'Old', 'sent', now() - interval '41 days', now() - interval '40 days'
		FROM generate_series(1, 1500);
		INSERT INTO mail.outbox (id, kind, to_address, subject, text_body, created_at, sent_at)
		VALUES (gen_random_uuid(), 'receipt', 'recent@example.org', 'Recent', 'sent', now() - interval '1 day', now() - interval '1 day');
		INSERT INTO mail.outbox (id, kind, to_address, subject, text_body, created_at, failed_at, last_error)
		VALUES (gen_random_uuid(), 'letter', 'failed@example.org', 'Failed', 'failed', now() - interval '60 days', now() - interval '59 days', '550 no such mailbox');
		INSERT INTO mail.outbox (id, kind, to_address, subject, text_body, created_at)
		VALUES (gen_random_uuid(), 'invitation', 'pending@example.org', 'Pending', 'queued', now() - interval '60 days')`)
	if err != nil {
		t.Fatal(err)
	}
	n, err := mail.Prune(ctx, pool, time.Now().Add(-mail.DefaultRetention))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1500 {
		t.Errorf("pruned %d, want 1500", n)
	}
	rows, err := pool.Query(ctx, `SELECT to_address FROM mail.outbox ORDER BY to_address`)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		left = append(left, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"failed@example.org", "pending@example.org", "recent@example.org"}
	if len(left) != len(want) || left[0] != want[0] || left[1] != want[1] || left[2] != want[2] {
		t.Errorf("left %v, want %v", left, want)
	}
	// Nothing more to do: a second pass deletes nothing.
	if n, err := mail.Prune(ctx, pool, time.Now().Add(-mail.DefaultRetention)); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v", n, err)
	}
}
