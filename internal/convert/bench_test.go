package convert

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// bigHAR is a recording of n API calls, each answering a JSON list of 40
// records with ids and tokens, and each sending one id and one token from
// an answer before it: the shape of a long session in a single-page app.
func bigHAR(n int) []byte {
	var list []any
	for i := 0; i < n; i++ {
		var recs []map[string]any
		for k := 0; k < 40; k++ {
			recs = append(recs, map[string]any{
				"id":    fmt.Sprintf("%d%06d", i, k),
				"token": fmt.Sprintf("tk%05dx%05dQ", i, k),
				"name":  "record",
				"n":     k,
			})
		}
		resp, _ := json.Marshal(map[string]any{"items": recs, "total": 40})
		url := "http://app.test/api/items"
		hdr := []map[string]string{}
		if i > 0 {
			url = fmt.Sprintf("http://app.test/api/items/%d%06d", i-1, i%40)
			hdr = append(hdr, map[string]string{"name": "X-Token", "value": fmt.Sprintf("tk%05dx%05dQ", i-1, 3)})
		}
		list = append(list, map[string]any{
			"startedDateTime": time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano),
			"time":            5,
			"request":         map[string]any{"method": "GET", "url": url, "headers": hdr},
			"response": map[string]any{"status": 200, "headers": []any{},
				"content": map[string]any{"mimeType": "application/json", "text": string(resp)}},
		})
	}
	b, _ := json.Marshal(map[string]any{"log": map[string]any{"entries": list}})
	return b
}

// BenchmarkHARLarge converts a recording of 1000 calls (about 3 MB); the
// time per conversion must grow with the recording's size, not with its
// square.
func BenchmarkHARLarge(b *testing.B) {
	har := bigHAR(1000)
	b.SetBytes(int64(len(har)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := HAR(har, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
