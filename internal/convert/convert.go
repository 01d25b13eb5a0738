package convert

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Options shape a conversion.
type Options struct {
	// Source names the recording in the plan's header comment.
	Source string
	// Name is the plan's and its scenario's name (default "recording").
	Name string
	// Host is the host[:port] whose requests make the plan; the others are
	// third-party and left out unless KeepThirdParty. Default: the host of
	// the first request that is not a static asset.
	Host           string
	KeepStatic     bool
	KeepThirdParty bool
	// NoCorrelate keeps every value as recorded.
	NoCorrelate bool
	// MinThink: recorded gaps shorter than this are not kept as think steps
	// (default 100ms; a browser's own scheduling makes gaps of a few ms).
	MinThink time.Duration
	// Users and Duration make the plan's single load stage (default 1 user
	// for 1m).
	Users    int
	Duration time.Duration
	// AllowFiles are directories beyond the current one that curl's @FILE
	// may be read from (package localfile): the file goes into the plan.
	AllowFiles []string
	// TargetUserinfo is curl's user:password, with ${ENV} references, for
	// the target; Comments are lines for the plan's header comment (what
	// to set before running it). Both are set by Curl.
	TargetUserinfo string
	Comments       []string
	// websockets are a HAR's WebSocket connections, made scenarios of
	// their own (harws.go).
	websockets []*wsRecording
}

// Summary says what a conversion kept and left out, for the user.
type Summary struct {
	Total, Kept        int
	Static, ThirdParty int
	Other              int // not sendable by a plan: OPTIONS preflights, failed requests, WebSocket upgrades
	Captures           []string
	Generated          []string // client-made UUIDs replaced by {{ uuid }}
	Notes              []string
	MainHost           string
	ThirdPartyHosts    []string
	thirdPartySeen     map[string]bool
}

// HAR converts a HAR file's contents to a plan.
func HAR(data []byte, o Options) ([]byte, Summary, error) {
	xs, ws, notes, err := parseHAR(data)
	if err != nil {
		return nil, Summary{}, err
	}
	o.websockets = ws
	plan, s, err := build(xs, o)
	s.Notes = append(notes, s.Notes...)
	return plan, s, err
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "recording"
	}
	if o.MinThink == 0 {
		o.MinThink = 100 * time.Millisecond
	}
	if o.Users <= 0 {
		o.Users = 1
	}
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
}

var staticExt = map[string]bool{
	".js": true, ".mjs": true, ".css": true, ".map": true, ".png": true, ".jpg": true, ".jpeg": true,
	".gif": true, ".svg": true, ".ico": true, ".webp": true, ".avif": true, ".bmp": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	".mp4": true, ".webm": true, ".mp3": true, ".ogg": true, ".wav": true,
}

var staticResource = map[string]bool{
	"stylesheet": true, "script": true, "image": true, "font": true, "media": true,
	"manifest": true, "texttrack": true,
}

// isStatic tells assets a browser fetches to draw a page from the requests
// the application makes: the kind the recorder saw first, then the file
// extension, then what the server said it sent.
func isStatic(x *exchange) bool {
	if x.method != "GET" && x.method != "HEAD" {
		return false
	}
	if staticResource[x.resource] {
		return true
	}
	if staticExt[strings.ToLower(path.Ext(x.u.Path))] {
		return true
	}
	mt := mediaType(x.respCT)
	return strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "font/") || strings.HasPrefix(mt, "video/") ||
		strings.HasPrefix(mt, "audio/") || mt == "text/css" || strings.Contains(mt, "javascript")
}

var sendable = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true}

func build(xs []*exchange, o Options) ([]byte, Summary, error) {
	o.defaults()
	s := Summary{Total: len(xs), thirdPartySeen: map[string]bool{}}
	main := o.Host
	if main == "" {
		for _, x := range xs {
			if !isStatic(x) && sendable[x.method] {
				main = x.u.Host
				break
			}
		}
		if main == "" && len(xs) > 0 {
			main = xs[0].u.Host
		}
	}
	s.MainHost = main
	var scheme string
	var kept []*exchange
	for _, x := range xs {
		switch {
		case !sendable[x.method] || x.status == 0 && x.resource != "" || x.status == 101:
			// A status of 0 is a request the browser never got an answer
			// to (blocked, cancelled); a plan cannot send OPTIONS, and a
			// CORS preflight is the browser's business anyway.
			s.Other++
			continue
		case x.u.Host != main && !o.KeepThirdParty:
			s.ThirdParty++
			if !s.thirdPartySeen[x.u.Host] {
				s.thirdPartySeen[x.u.Host] = true
				s.ThirdPartyHosts = append(s.ThirdPartyHosts, x.u.Host)
			}
			continue
		case isStatic(x) && !o.KeepStatic:
			s.Static++
			continue
		}
		if scheme == "" && x.u.Host == main {
			scheme = x.u.Scheme
		}
		kept = append(kept, x)
	}
	if len(kept) == 0 && len(o.websockets) == 0 {
		return nil, s, fmt.Errorf("nothing to convert: all %d requests were static assets (%d), third-party (%d) or not sendable (%d); --keep-static or --keep-third-party keep them", s.Total, s.Static, s.ThirdParty, s.Other)
	}
	if scheme == "" {
		scheme, main = keptScheme(kept, o.websockets, main)
	}
	s.Kept = len(kept)
	// The target is plan text: recorded parts escaped, curl's user:password
	// with its ${ENV} references (curlauth.go) as they are.
	target := litKey(scheme + "://" + main)
	if len(kept) == 1 && kept[0].fromCurl && o.TargetUserinfo != "" {
		target = scheme + "://" + o.TargetUserinfo + "@" + litKey(main)
	}

	steps := make([]*step, len(kept))
	for i, x := range kept {
		steps[i] = newStep(x, main, &s)
	}
	if !o.NoCorrelate {
		correlate(steps, &s)
	}
	out, err := render(steps, target, o, &s)
	return out, s, err
}
