package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// rawConn is one client's keep-alive HTTP/1.1 connection. It writes
// requests rendered once and reads responses with a parser that keeps only
// the status: on a 2-core machine the load generator shares the CPU with
// the server it measures, and net/http's client spent about as much CPU
// per request as PostgreSQL did on the api-keys path (docs/performance.md).
type rawConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
}

func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// do sends req and returns the response's status. Any failure closes the
// connection; the next call dials again.
func (c *rawConn) do(req []byte) (int, error) {
	if c.conn == nil {
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(context.Background(), "tcp", c.addr)
		if err != nil {
			return 0, err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write(req); err != nil {
		c.close()
		return 0, err
	}
	status, keep, err := readResponse(c.r)
	if err != nil || !keep {
		c.close()
	}
	return status, err
}

// renderRequest renders an HTTP/1.1 request for target (an http:// URL),
// with the given headers, a JSON body when body is not empty, and
// keep-alive. It returns the address to dial.
func renderRequest(method, target string, hs []string, body string) (addr string, req []byte, err error) {
	rest, ok := strings.CutPrefix(target, "http://")
	if !ok {
		return "", nil, fmt.Errorf("only http:// URLs are supported: %q", target)
	}
	host, path, _ := strings.Cut(rest, "/")
	path = "/" + path
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	for _, h := range hs {
		k, v, _ := strings.Cut(h, ":")
		fmt.Fprintf(&b, "%s: %s\r\n", strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if !strings.Contains(host, ":") {
		host += ":80"
	}
	return host, b.Bytes(), nil
}

var errMalformed = errors.New("malformed HTTP response")

// readResponse reads one HTTP/1.1 response from r, discarding its body,
// and returns its status and whether the connection may carry another
// request. Bodies are delimited by Content-Length, chunked encoding, or the
// end of the connection.
func readResponse(r *bufio.Reader) (status int, keepAlive bool, err error) {
	line, err := readLine(r)
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || (len(line) > 12 && line[12] != ' ') {
		return 0, false, errMalformed
	}
	keepAlive = line[7] == '1'
	length, chunked := int64(-1), false
	for {
		line, err = readLine(r)
		if err != nil {
			return 0, false, err
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, errMalformed
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(v), 10, 64)
			if err != nil || length < 0 {
				return 0, false, errMalformed
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				keepAlive = false
			}
		}
	}
	switch {
	case status < 200 || status == 204 || status == 304:
		return status, keepAlive, nil
	case chunked:
		return status, keepAlive, discardChunks(r)
	case length >= 0:
		_, err = r.Discard(int(length))
		return status, keepAlive, err
	default:
		_, err = io.Copy(io.Discard, r)
		return status, false, err
	}
}

func discardChunks(r *bufio.Reader) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return errMalformed
		}
		if n == 0 {
			for { // trailers, up to the empty line
				line, err = readLine(r)
				if err != nil || len(line) == 0 {
					return err
				}
			}
		}
		if _, err := r.Discard(int(n)); err != nil {
			return err
		}
		if line, err = readLine(r); err != nil || len(line) != 0 {
			return errors.Join(err, errMalformed)
		}
	}
}

// readLine returns the next line without its CRLF (or LF). The slice is
// valid until the next read.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errMalformed
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
