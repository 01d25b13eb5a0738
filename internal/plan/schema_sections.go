package plan

// The schema of each plan section. Paths are the plan-keys reference's, so
// keyDocs gives each key its description.

// users is a number of users or a ramp "0 -> 400".
const usersRE = `^\s*[0-9]+\s*(->\s*[0-9]+\s*)?$|` + envRef

// rateRE is arrivals per second, minute or hour, or a ramp of them: a
// unit on at least one side (a bare 100 is refused: per what?).
const (
	rateNum  = `\s*[0-9]*\.?[0-9]+\s*`
	rateUnit = `/\s*(s|m|h)\s*`
	rateRE   = `^` + rateNum + rateUnit + `$|^` + rateNum + `(` + rateUnit + `)?->` + rateNum + rateUnit + `$|^` +
		rateNum + rateUnit + `->` + rateNum + `(` + rateUnit + `)?$|` + envRef
)

// thinkRangeRE is a uniform pause, "1s..3s".
const thinkRangeRE = `^\s*` + durationRE + `\s*\.\.\s*` + durationRE + `\s*$`

func defaultsSchema() obj {
	return section("defaults", "", []prop{{"headers", headers()}, {"timeout", duration()}})
}

func tlsSchema() obj {
	return section("tls", "", []prop{
		{"ca_file", str()}, {"cert_file", str()}, {"key_file", str()},
		{"insecure", boolish()}, {"server_name", str()},
	})
}

func httpSchema() obj {
	return section("http", "", []prop{
		{"source_addresses", oneOrList(str())},
		{"connection", enum("keep-alive", "per-iteration", "per-request")},
		{"max_connections_per_host", intish()},
		{"max_header_bytes", scalar()},
		{"max_kept_body_bytes", scalar()},
		{"version", enum("auto", "http/1.1", "h2", "h2c")},
		{"h2_connections", enum("per-user", "shared")},
		{"redirects", intish()},
		{"proxy", str()},
	})
}

func dataSchema() obj {
	return section("data.NAME", "a CSV data source", []prop{
		{"file", str()}, {"pick", enum("sequential", "unique", "random")}, {"by_tenant", str()},
	}, "file")
}

func tenantsSchema() obj {
	wave := section("tenants.waves[]", "", []prop{{"share", scalar()}, {"offset", duration()}})
	return section("tenants", "", []prop{{"count", intish()}, {"waves", listOf(wave)}}, "count")
}

func scenariosSchema() obj {
	sc := section("scenarios.NAME", "a scenario: request steps, or one persistent connection", []prop{
		{"weight", atLeastOne(0)},
		{"steps", stepsSchema()},
		{"websocket", websocketSchema()},
		{"signalr", signalrSchema()},
		{"users", intish()},
		{"per_tenant", intish()},
		{"once", stepsSchema()},
		{"renew_on", oneOrList(intish())},
	})
	return nonNull(mapOf(sc))
}

func loadSchema() obj {
	stage := section("load.stages[]", "", []prop{
		{"duration", duration()},
		{"users", obj{"type": []string{"integer", "string"}, "pattern": usersRE}},
		{"rate", obj{"type": "string", "pattern": rateRE}},
		{"steps", intish()},
	}, "duration")
	return section("load", "", []prop{
		{"stages", nonNull(listOf(stage))},
		{"pace", obj{"anyOf": []obj{duration(), distributionSchema()}}},
		{"max_in_flight", intish()},
		{"grace", duration()},
	}, "stages")
}

// pauseSchema is a think value: fixed, uniform or a distribution (a pace
// has no uniform form).
func pauseSchema() obj {
	return obj{"anyOf": []obj{duration(), {"type": "string", "pattern": thinkRangeRE}, distributionSchema()}}
}

func distributionSchema() obj {
	return section("steps[].think / load.pace (distribution)", "", []prop{
		{"exponential", duration()}, {"normal", duration()}, {"lognormal", duration()},
		{"sd", duration()}, {"max", duration()},
	})
}

func gatesSchema() obj {
	return section("gates", "", []prop{
		{"vary", enum("users", "rate", "tenants")},
		{"levels", listOf(scalar())},
		{"hold", duration()},
		{"ramp", duration()},
		{"slo", listOf(str())},
	}, "vary", "levels", "hold", "slo")
}

func monitorSchema() obj {
	kinds := []string{"postgres", "redis", "prometheus", "process", "host"}
	props := make([]prop, 0, len(kinds)+6)
	for _, k := range kinds {
		target := nonNull(scalar())
		if k == "host" {
			// host watches this machine: it takes no target.
			target = obj{"anyOf": []obj{{"type": "null"}, {"const": ""}}}
		}
		props = append(props, prop{k, target})
	}
	props = append(props,
		prop{"name", str()}, prop{"required", boolish()}, prop{"interval", duration()},
		prop{"timeout", duration()}, prop{"select", oneOrList(str())}, prop{"queries", mapOf(str())})
	m := section("monitors[]", "a server monitor: one kind key", props)
	any := make([]obj, len(kinds))
	for i, k := range kinds {
		any[i] = obj{"required": []string{k}}
	}
	m["anyOf"] = any
	// A bare kind (- host) is a monitor with that kind's defaults.
	return obj{"anyOf": []obj{{"enum": kinds}, m}}
}

func websocketSchema() obj {
	send := section("websocket.steps[].send", "", []prop{{"text", scalar()}, {"json", anyValue()}, {"binary", str()}})
	wait := section("websocket.steps[].wait", "", []prop{
		{"json", str()}, {"equals", anyValue()}, {"regex", str()}, {"timeout", duration()}, {"capture", mapOf(captureSchema())},
	})
	closeStep := section("websocket.steps[].close", "", []prop{{"code", intish()}, {"reason", str()}})
	step := section("websocket.steps[]", "one step of the connection's script", []prop{
		{"name", scalar()},
		{"send", obj{"anyOf": []obj{scalar(), send}}},
		{"wait", wait},
		{"hold", durationOr("run")},
		{"close", obj{"anyOf": []obj{{"type": "null"}, closeStep}}},
	})
	return section("scenarios.NAME.websocket", "", []prop{
		{"url", str()},
		{"subprotocols", oneOrList(str())},
		{"headers", headers()},
		{"connect_timeout", duration()},
		{"keep_alive", durationOr("off", "false", "never")},
		{"server_timeout", durationOr("off", "false", "never")},
		{"steps", listOf(step)},
		{"reconnect", reconnectSchema()},
	}, "url")
}

func signalrSchema() obj {
	call := section("signalr.invoke[]", "", []prop{
		{"method", str()}, {"invoke", str()}, {"send", str()}, {"stream", str()},
		{"args", listOf(anyValue())}, {"timeout", duration()},
	})
	s := section("scenarios.NAME.signalr", "", []prop{
		{"url", str()},
		{"access_token", scalar()},
		{"access_token_in", enum(tokenPlaces...)},
		{"headers", headers()},
		{"skip_negotiate", boolish()},
		{"keep_alive", durationOr("off", "false", "never")},
		{"server_timeout", durationOr("off", "false", "never")},
		{"handshake_timeout", duration()},
		{"negotiate_timeout", duration()},
		{"invoke", listOf(call)},
		{"listen", oneOrList(str())},
		{"timestamp", scalar()},
		{"hold", durationOr("run")},
		{"reconnect", reconnectSchema()},
		{"protocol", enum(signalrProtocols...)},
		{"transport", enum(signalrTransports...)},
		{"stateful_reconnect", boolish()},
		{"urls", listOf(str())},
		{"spread", enum("round_robin", "tenant")},
	})
	s["anyOf"] = []obj{{"required": []string{"url"}}, {"required": []string{"urls"}}}
	return s
}
