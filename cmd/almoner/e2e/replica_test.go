package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testpg"
)

// TestReadReplica runs report runs against a real streaming hot standby
// (pg_basebackup -R of a private primary, both on free ports): a run
// reads from the standby (its pg_stat_statements counts the report's
// query), and when the standby stops, or its replay is paused past
// ALMONER_READ_MAX_LAG while the primary takes a gift, runs read from
// the primary without one failed request (docs/scaling.md).
func TestReadReplica(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	primary, err := testpg.StartPrimary(ctx)
	if err != nil {
		t.Fatalf("private primary: %v", err)
	}
	t.Cleanup(primary.Close)
	sqlExec(t, primary.URL("postgres"), `CREATE DATABASE almoner`)
	sqlExec(t, primary.URL("almoner"), `CREATE EXTENSION pg_stat_statements`)
	standby, err := primary.Standby(ctx)
	if err != nil {
		t.Fatalf("standby: %v\n%s", err, primary.Log())
	}
	t.Cleanup(standby.Close)
	c := apptest.Start(t, apptest.Options{DatabaseURL: primary.URL("almoner"), Settings: map[string]string{
		db.ReadURLVar: standby.URL("almoner"), db.ReadMaxLagVar: "1s",
	}})
	tn := c.NewTenant(t)
	fund := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	contact := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Ada", "lastName": "Lovelace"}).
		Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	give := func(amount float64) {
		c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, map[string]any{
			"contactId": contact, "currency": "USD",
			"donations": []any{map[string]any{"fundId": fund, "amount": amount}},
			"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": amount}},
		}).Expect(t, http.StatusCreated)
	}
	give(100)
	report := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "Top", "typeKey": "top-donors"}).
		Expect(t, http.StatusCreated).Map(t)["id"].(string)
	// total runs the report; every run must answer 200 whichever server
	// serves it.
	total := func() string {
		var run reportRun
		c.Do(t, "POST", tPath(tn.ID, "/reports/", report, "/run"), tn.Key, map[string]any{}).Expect(t, http.StatusOK).JSON(t, &run)
		if len(run.Totals) == 0 {
			return ""
		}
		return string(run.Totals[0]["Amount"])
	}
	// until runs the report until its total is want (the standby may lag
	// a moment behind the gift just made).
	until := func(step, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := total(); got != want; got = total() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: report total %q, want %q", step, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// cohortCount counts the first-time donors; raised is the dashboard's
	// total this fiscal year. Both must answer 200 whichever server
	// serves them.
	cohortCount := func() int {
		var n struct{ Count int }
		c.Do(t, "GET", tPath(tn.ID, "/cohorts/first-time-donors/count"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &n)
		return n.Count
	}
	raised := func() string {
		var d dashboardDoc
		c.Do(t, "GET", tPath(tn.ID, "/dashboard"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &d)
		return f64(d.Raised.Current)
	}

	// feedPage reads one event of the feed: a full page, history the
	// standby may serve (the tail is the primary's).
	feedPage := func() {
		t.Helper()
		var page struct {
			Items   []map[string]any `json:"items"`
			HasMore bool             `json:"hasMore"`
		}
		c.Do(t, "GET", tPath(tn.ID, "/events?limit=1"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if len(page.Items) != 1 || !page.HasMore {
			t.Fatalf("feed: %d events, hasMore %v: want 1 and more", len(page.Items), page.HasMore)
		}
	}

	t.Run("reads from the standby", func(t *testing.T) {
		until("first gift", "100.00")
		calls := standbyReportCalls(t, standby.URL("almoner"))
		for i := 0; i < 3 && calls == 0; i++ {
			until("first gift", "100.00")
			calls = standbyReportCalls(t, standby.URL("almoner"))
		}
		if calls == 0 {
			t.Fatalf("the standby ran no report query (pg_stat_statements)")
		}
		// A cohort count and a dashboard read from the standby too.
		for _, k := range []struct{ name, like string }{
			{"cohort count", `%count(*)%report\_contact\_giving\_v1%`},
			{"dashboard", `%report\_schedules\_v1%`},
		} {
			n, r := cohortCount(), raised()
			for i := 0; i < 50 && (n != 1 || r != "100" || standbyCalls(t, standby.URL("almoner"), k.like) == 0); i++ {
				time.Sleep(100 * time.Millisecond)
				n, r = cohortCount(), raised()
			}
			if n != 1 || r != "100" {
				t.Errorf("cohort count %d, raised %s: want 1 and 100", n, r)
			}
			if standbyCalls(t, standby.URL("almoner"), k.like) == 0 {
				t.Errorf("the standby ran no %s query (pg_stat_statements)", k.name)
			}
		}
		const feedSQL = `%pg\_snapshot\_xmin%audit.events%`
		for i := 0; i < 50 && standbyCalls(t, standby.URL("almoner"), feedSQL) == 0; i++ {
			feedPage()
			time.Sleep(100 * time.Millisecond)
		}
		if standbyCalls(t, standby.URL("almoner"), feedSQL) == 0 {
			t.Errorf("the standby served no page of the event feed (pg_stat_statements)")
		}
	})

	t.Run("standby stopped: reads from the primary", func(t *testing.T) {
		if err := standby.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		give(10)
		// Stopped, the standby has not the new gift: a total of 110 is
		// the primary's, and no run before it failed.
		until("standby stopped", "110.00")
		for range 5 {
			if got := total(); got != "110.00" {
				t.Fatalf("standby stopped: total %q", got)
			}
		}
		// The dashboard and the cohort count fall back as the report
		// does: the stopped standby has not the 10.
		if got := raised(); got != "110" {
			t.Fatalf("standby stopped: dashboard raised %s, want 110", got)
		}
		if got := cohortCount(); got != 1 {
			t.Fatalf("standby stopped: cohort count %d, want 1", got)
		}
		feedPage()
		if err := standby.Start(ctx); err != nil {
			t.Fatalf("restart standby: %v\n%s", err, standby.Log())
		}
	})

	t.Run("replay paused past the bound: reads from the primary", func(t *testing.T) {
		// Back in sync first: the standby serves again.
		until("standby back", "110.00")
		before := standbyReportCalls(t, standby.URL("almoner"))
		for i := 0; i < 50 && standbyReportCalls(t, standby.URL("almoner")) == before; i++ {
			total()
			time.Sleep(100 * time.Millisecond)
		}
		if standbyReportCalls(t, standby.URL("almoner")) == before {
			t.Fatal("the restarted standby serves no report")
		}
		sqlExec(t, standby.URL("almoner"), `SELECT pg_wal_replay_pause()`)
		give(5)
		until("replay paused", "115.00")
		var paused bool
		sqlQuery(t, standby.URL("almoner"), `SELECT pg_is_wal_replay_paused()`, &paused)
		if !paused {
			t.Fatal("replay is no longer paused: the total may be the standby's")
		}
		sqlExec(t, standby.URL("almoner"), `SELECT pg_wal_replay_resume()`)
	})
}

// standbyReportCalls counts the queries over the published views the
// standby ran (the test runs only the report until it reads a cohort or
// a dashboard).
func standbyReportCalls(t *testing.T, standbyURL string) int64 {
	t.Helper()
	return standbyCalls(t, standbyURL, `%report\_%\_v1%`)
}

// standbyCalls counts the standby's executions of the statements whose
// text is LIKE like.
func standbyCalls(t *testing.T, standbyURL, like string) int64 {
	t.Helper()
	var n int64
	sqlQuery(t, standbyURL, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE query LIKE '`+like+`' AND query NOT LIKE '%pg_stat_statements%'`, &n)
	return n
}

func sqlExec(t *testing.T, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func sqlQuery(t *testing.T, url, sql string, dst any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql).Scan(dst); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
