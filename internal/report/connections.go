package report

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// connections writes the persistent-connection populations (WebSocket,
// SignalR): how many connected, how they ended, what the server pushed.
// Their timed operations are in the Request Type Breakdown as steps.
func connections(b *bytes.Buffer, r *result.Result) {
	c := r.Connections
	if c == nil || len(c.Scenarios) == 0 {
		return
	}
	b.WriteString("Connections:\n")
	for _, s := range c.Scenarios {
		line := fmt.Sprintf("  %s (%s): %d attempts, %d opened, %d failed", s.Scenario, s.Protocol, s.Attempts, s.Opened, s.Failed)
		if fl := failureList(s.ByClass, sample.OK); s.Failed > 0 && len(fl) > 0 {
			line += " (" + strings.Join(fl, ", ") + ")"
		}
		// Every opened connection either is open at the end or ended
		// early for one of the Disconnects reasons; both are shown so the
		// reader can check that they add up.
		fmt.Fprintf(b, "%s; peak %d open of %d, %d open at the end\n", line, s.PeakOpen, s.Target, s.OpenAtEnd)
		if len(s.Disconnects) > 0 {
			fmt.Fprintf(b, "    Disconnects: %s\n", connCounts(s.Disconnects))
		}
		connRetries(b, s)
		if len(s.ServerCloses) > 0 {
			fmt.Fprintf(b, "    Server Close messages: %s\n", connCounts(s.ServerCloses))
		}
		if len(s.StreamItems) > 0 {
			fmt.Fprintf(b, "    Stream items: %s\n", connCounts(s.StreamItems))
		}
		if len(s.Pushes) > 0 || s.OtherPushes > 0 {
			p := connCounts(s.Pushes)
			if s.OtherPushes > 0 {
				if p != "" {
					p += ", "
				}
				p += fmt.Sprintf("%d to other targets", s.OtherPushes)
			}
			fmt.Fprintf(b, "    Pushes: %s\n", p)
		}
		if s.HubProtocol != "" {
			// Which transport each SignalR connection ran on (auto may
			// mix them) and in which hub protocol.
			t := connCounts(s.Transports)
			if t == "" {
				t = "none opened"
			}
			if s.Fallbacks > 0 {
				t += fmt.Sprintf("; %d fallbacks", s.Fallbacks)
			}
			if s.TokenRefusals > 0 {
				t += fmt.Sprintf("; %d ended by a refused access token, restarted", s.TokenRefusals)
			}
			fmt.Fprintf(b, "    Hub protocol %s; transports: %s\n", s.HubProtocol, t)
			if s.Reconnects+s.ReconnectFailures+s.Lost > 0 {
				fmt.Fprintf(b, "    Stateful reconnect: %d resumed, %d failed; messages %d recovered, %d duplicates skipped, %d lost\n",
					s.Reconnects, s.ReconnectFailures, s.Recovered, s.Duplicates, s.Lost)
			}
		}
		fmt.Fprintf(b, "    Messages: %d in (%s), %d out (%s)\n", s.MessagesIn, connBytes(s.BytesIn), s.MessagesOut, connBytes(s.BytesOut))
	}
	b.WriteString("\n")
}

// connRetries writes how the scenario's slots waited to retry, and its
// hubs when it was spread over several.
func connRetries(b *bytes.Buffer, s result.ConnScenario) {
	if r := retrySummary(s); r != "" {
		fmt.Fprintf(b, "    Retries: %s\n", r)
	}
	for _, h := range s.Hubs {
		fmt.Fprintf(b, "    Hub %s: %d opened, %d failed; peak %d open, %d open at the end; %d pushes\n", h.URL, h.Opened, h.Failed, h.PeakOpen, h.OpenAtEnd, h.Pushes)
	}
}

// retrySummary is how the scenario's slots waited to retry ("" when none
// did), in every report alike.
func retrySummary(s result.ConnScenario) string {
	if s.PeakWaiting == 0 && s.GaveUp == 0 && s.RetryAfter == 0 {
		return ""
	}
	return fmt.Sprintf("peak %d waiting to retry at once, %d gave up, %d waits lengthened by Retry-After", s.PeakWaiting, s.GaveUp, s.RetryAfter)
}

// connCounts lists name counts, largest first, then by name.
func connCounts(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

func connBytes(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// connRow is one connection population as the Markdown and HTML tables
// show it, from the same helpers as the text summary's lines so the three
// reports cannot disagree.
type connRow struct {
	Scenario, Protocol       string
	Attempts, Opened, Failed string
	Peak, OpenAtEnd          string
	Disconnects, Pushes      string
	MessagesIn, MessagesOut  string
	// Retries is retrySummary's, "–" when none waited; Hubs are the
	// scenario's hubs when it was spread over several.
	Retries string
	Hubs    []hubRow
}

// hubRow is one hub of a scenario spread over several, as the text
// summary's Hub line counts it.
type hubRow struct {
	URL, Opened, Failed, Peak, OpenAtEnd, Pushes string
}

func connRows(r *result.Result) []connRow {
	if r.Connections == nil {
		return nil
	}
	var rows []connRow
	for _, s := range r.Connections.Scenarios {
		failed := fmt.Sprint(s.Failed)
		if fl := failureList(s.ByClass, sample.OK); s.Failed > 0 && len(fl) > 0 {
			failed += " (" + strings.Join(fl, ", ") + ")"
		}
		pushes := connCounts(s.Pushes)
		if s.OtherPushes > 0 {
			if pushes != "" {
				pushes += ", "
			}
			pushes += fmt.Sprintf("%d to other targets", s.OtherPushes)
		}
		rows = append(rows, connRow{
			Scenario: s.Scenario, Protocol: s.Protocol,
			Attempts: fmt.Sprint(s.Attempts), Opened: fmt.Sprint(s.Opened), Failed: failed,
			Peak:        fmt.Sprintf("%d of %d", s.PeakOpen, s.Target),
			OpenAtEnd:   fmt.Sprint(s.OpenAtEnd),
			Disconnects: dashIfEmpty(connCounts(s.Disconnects)), Pushes: dashIfEmpty(pushes),
			MessagesIn:  fmt.Sprintf("%d (%s)", s.MessagesIn, connBytes(s.BytesIn)),
			MessagesOut: fmt.Sprintf("%d (%s)", s.MessagesOut, connBytes(s.BytesOut)),
			Retries:     dashIfEmpty(retrySummary(s)),
			Hubs:        hubRows(s.Hubs),
		})
	}
	return rows
}

func hubRows(hubs []result.HubCount) []hubRow {
	var rows []hubRow
	for _, h := range hubs {
		rows = append(rows, hubRow{URL: h.URL, Opened: fmt.Sprint(h.Opened), Failed: fmt.Sprint(h.Failed),
			Peak: fmt.Sprint(h.PeakOpen), OpenAtEnd: fmt.Sprint(h.OpenAtEnd), Pushes: fmt.Sprint(h.Pushes)})
	}
	return rows
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
