package signalr

import (
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/proto/ws"
)

// Azure SignalR Service answers the app server's negotiate with the
// service URL and an access token (a JWT whose exp ends its use). The
// official clients keep that token for the connection's life and never
// renew it:
//   - JavaScript (src/SignalR/clients/ts/signalr/src/HttpConnection.ts):
//     a redirect's accessToken replaces the token factory with one that
//     returns it, and unsets the AccessTokenHttpClient's factory "so the
//     AccessTokenHttpClient won't retry with the same token, since we
//     know it won't change until a connection restart". A 401 on a poll
//     or a send ends the transport (LongPollingTransport.ts, Utils.ts
//     sendMessage), as does the end of the event stream
//     (ServerSentEventsTransport.ts).
//   - .NET (src/SignalR/clients/csharp/Http.Connections.Client/src/
//     HttpConnection.cs and Internal/AccessTokenHttpMessageHandler.cs):
//     the redirect's token replaces the access-token provider; on a 401
//     the handler asks the provider again, which gives the same token,
//     and retries once; the second 401 ends the transport.
// Neither negotiates again for a token: the connection ends, and only a
// restart (automatic reconnect, or the application starting it again)
// negotiates with the app server anew. stampede does the same: a request
// refused with 401 ends the connection with errTokenRefused, and the run
// connects again after its reconnect delay; that connection's first
// negotiate counts under "negotiate restart".

// Where the token goes: negotiate, polls and sends carry it in their
// Authorization header, as every official client does. The event stream
// carries it in its URL's access_token query, as the JavaScript client
// always sends it (an EventSource sets no header; the .NET client puts it
// in the header): stampede imitates the JavaScript client there, and
// servers accept both. The WebSocket carries it in the upgrade's
// Authorization header, as the .NET client and the JavaScript client in
// Node do, or with Options.WebSocketTokenInQuery (plan: access_token_in:
// query) in the URL's query, as a browser must.

// wsTokenHeader is the WebSocket upgrade's header: hdr with the bearer
// token unless it goes in the query (or there is none). hdr is shared by
// the population, so it is copied, never changed.
func wsTokenHeader(hdr http.Header, token string, inQuery bool) http.Header {
	if token == "" || inQuery {
		return hdr
	}
	h := hdr.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Authorization", "Bearer "+token)
	return h
}

// errTokenRefused is the cause of a connection's end when the server
// refused the access token it was given (401 to a poll, a send, or a
// stateful reconnect's dial).
var errTokenRefused = errors.New("the server refused the access token (401): the connection ends and restarts from negotiate, as the official clients do")

// tokenRefused says whether a connection ended because the server refused
// its access token.
func tokenRefused(d *ws.Disconnect) bool {
	return d != nil && errors.Is(d.Err, errTokenRefused)
}

// endReason is the disconnect reason of a request that failed with err:
// a refused token has its own, so that server_close keeps meaning the
// peer sent a close, and write_failed a broken socket.
func endReason(err error, other ws.Reason) ws.Reason {
	if errors.Is(err, errTokenRefused) {
		return ws.TokenRefused
	}
	return other
}

// refusedToken says whether an answer with status to a request that
// carried bearer refused the token.
func refusedToken(status int, bearer string) bool {
	return status == http.StatusUnauthorized && bearer != ""
}

// restartsDue counts connections ended by a refused token whose restart
// has not yet negotiated: the population's next negotiate is that
// restart. A population's slots restart in any order, so which slot's
// negotiate is named a restart may differ, never how many are.
type restartsDue struct{ n atomic.Int64 }

func (r *restartsDue) take() bool {
	for {
		n := r.n.Load()
		if n <= 0 {
			return false
		}
		if r.n.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
