package httpc

import (
	"bufio"
	"strings"
	"testing"
)

// A chunk size line past the read buffer (a long chunk extension) is
// refused as what it is. Before, the message said "header line longer
// than 4096 bytes", and no header setting could change it.
func TestLongChunkLineIsNamed(t *testing.T) {
	answer := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=" + strings.Repeat("a", 5000) + "\r\nok\r\n0\r\n\r\n"
	var resp Response
	_, err := readResponse(bufio.NewReaderSize(strings.NewReader(answer), 4096), &Request{Method: "GET"}, &resp, DefaultMaxHeaderBytes, DefaultMaxKeptBody)
	if err == nil || !strings.Contains(err.Error(), "chunk size line") || strings.Contains(err.Error(), "header line") {
		t.Fatalf("err %v, want the chunk size line named", err)
	}
}
