package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestWalkToPage follows tokens through a list of five pages like the
// contacts list's: the token returned leads to the page asked for, and a
// page past the end is an error.
func TestWalkToPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		page := 1
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(tok, "to/"))
			if err != nil {
				http.Error(w, "bad token", http.StatusBadRequest)
				return
			}
			page = n
		}
		next := ""
		if page < 5 {
			next = fmt.Sprintf("to/%d", page+1)
		}
		_, _ = fmt.Fprintf(w, `{"items":[],"page":%d,"nextPageToken":%q}`, page, next)
	}))
	defer srv.Close()
	ctx := context.Background()
	tok, err := walkToPage(ctx, srv.Client(), srv.URL+"/contacts", "k", 4)
	if err != nil || tok != "to/4" {
		t.Errorf("page 4: token %q, %v; want to/4", tok, err)
	}
	if _, err := walkToPage(ctx, srv.Client(), srv.URL+"/contacts", "k", 7); err == nil {
		t.Error("page 7 of 5: want an error")
	}
	if _, err := walkToPage(ctx, srv.Client(), srv.URL+"/contacts", "wrong", 2); err == nil {
		t.Error("refused key: want an error")
	}
}
