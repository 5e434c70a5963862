package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadResponse(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		status int
		keep   bool
		bad    bool
		rest   string // what must be left unread: the next response
	}{
		{"content length", "HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhelloNEXT", 201, true, false, "NEXT"},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\nNEXT", 200, true, false, "NEXT"},
		{"no body on 204", "HTTP/1.1 204 No Content\r\n\r\nNEXT", 204, true, false, "NEXT"},
		{"connection close", "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 401, false, false, ""},
		{"HTTP/1.0 reads to the end", "HTTP/1.0 200 OK\r\n\r\nall of it", 200, false, false, ""},
		{"bare LF", "HTTP/1.1 404 Not Found\nContent-Length: 2\n\nnoNEXT", 404, true, false, "NEXT"},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, false, true, ""},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, false, true, ""},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, false, true, ""},
		{"header without colon", "HTTP/1.1 200 OK\r\nnope\r\n\r\n", 0, false, true, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, false, true, ""},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", 0, false, true, ""},
		{"truncated headers", "HTTP/1.1 200 OK\r\nContent-Le", 0, false, true, ""},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(c.in))
			status, keep, err := readResponse(r)
			if c.bad {
				if err == nil {
					t.Fatalf("accepted: status %d", status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if status != c.status || keep != c.keep {
				t.Errorf("status %d keep %v, want %d %v", status, keep, c.status, c.keep)
			}
			if rest, _ := io.ReadAll(r); string(rest) != c.rest {
				t.Errorf("left %q, want %q", rest, c.rest)
			}
		})
	}
}

// TestRawConnAgainstNetHTTP: requests rendered by renderRequest are what
// net/http's server reads (method, path, headers, body), and responses of
// every framing it writes are read back to back on one connection.
func TestRawConnAgainstNetHTTP(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, fmt.Sprintf("%s %s %s %s %s", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Content-Type"), b))
		switch r.URL.Path {
		case "/big": // over net/http's buffer: chunked
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(bytes.Repeat([]byte("x"), 64<<10))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":1}`))
		}
	}))
	defer srv.Close()
	c := &rawConn{addr: strings.TrimPrefix(srv.URL, "http://")}
	defer c.close()
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{{"POST", "/orders", `{"a":1}`, 201}, {"GET", "/big", "", 200}, {"DELETE", "/empty", "", 204}, {"GET", "/again", "", 201}} {
		_, req, err := renderRequest(tc.method, srv.URL+tc.path, []string{"X-Api-Key: k1"}, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		status, err := c.do(req)
		if err != nil || status != tc.status {
			t.Fatalf("%s %s: status %d, %v; want %d", tc.method, tc.path, status, err, tc.status)
		}
	}
	want := []string{"POST /orders k1 application/json {\"a\":1}", "GET /big k1  ", "DELETE /empty k1  ", "GET /again k1  "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("server read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzReadResponse: no input makes the reader panic or report success
// while reading past what it was given.
func FuzzReadResponse(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
	f.Add("HTTP/1.0 500 X\r\n\r\nbody")
	f.Fuzz(func(t *testing.T, in string) {
		r := bufio.NewReaderSize(strings.NewReader(in), 16)
		status, _, err := readResponse(r)
		if err == nil && (status < 100 || status > 999) {
			t.Fatalf("status %d accepted", status)
		}
	})
}
