package plan

// The schema of a scenario's steps. Steps nest (control steps hold steps),
// so a list of steps refers to the one step definition in $defs.

const stepRef = "#/$defs/step"

func stepsSchema() obj {
	return listOf(obj{"$ref": stepRef})
}

// stepSchema is one step: a request, a think, a script or a control step.
// Each kind is a closed set of keys told apart by the key it must have.
func stepSchema() obj {
	return obj{
		"description": "a step: a request (get, post, ...), think, script, or a control step (if, repeat, for_each, choose)",
		"anyOf": []obj{
			requestStepSchema(),
			section("steps[] (think step)", "", []prop{{"think", pauseSchema()}}, "think"),
			section("steps[] (script step)", "", []prop{
				{"script", str()}, {"name", scalar()}, {"group", str()}, {"sets", listOf(str())},
			}, "script"),
			controlStepSchema(),
		},
	}
}

func requestStepSchema() obj {
	props := make([]prop, 0, len(methods)+20)
	for _, m := range methods {
		props = append(props, prop{m, str()})
	}
	props = append(props,
		prop{"name", scalar()},
		prop{"group", str()},
		prop{"headers", headers()},
		prop{"query", mapOf(scalar())},
		prop{"json", anyValue()},
		prop{"form", mapOf(scalar())},
		prop{"body", scalar()},
		prop{"timeout", duration()},
		prop{"redirects", intish()},
		prop{"capture", mapOf(captureSchema())},
		prop{"expect", expectSchema()},
		prop{"body_file", str()},
		prop{"multipart", mapOf(obj{"anyOf": []obj{scalar(), multipartSchema()}})},
		prop{"gzip", boolish()},
		prop{"if", scalar()},
	)
	s := section("scenarios.NAME.steps[] (request step)", "a request step: one method key with its URL", props)
	one := make([]obj, len(methods))
	for i, m := range methods {
		one[i] = obj{"required": []string{m}}
	}
	s["oneOf"] = one
	return s
}

func captureSchema() obj {
	return section("steps[].capture.NAME", "a value taken from the answer", []prop{
		{"json", str()}, {"regex", str()}, {"header", str()}, {"secret", boolish()},
	})
}

func expectSchema() obj {
	return section("steps[].expect", "", []prop{
		{"status", oneOrList(obj{"type": []string{"integer", "string"}, "pattern": `^\s*([1-5][0-9]{2}|[1-5]xx)\s*$|` + envRef})},
		{"body_contains", scalar()},
		{"json", mapOf(scalar())},
	})
}

func multipartSchema() obj {
	return section("steps[].multipart.FIELD", "", []prop{
		{"value", scalar()}, {"file", str()}, {"content_type", str()}, {"filename", str()},
	})
}

func controlStepSchema() obj {
	s := section("steps[] (control step)", "a control step", []prop{
		{"if", scalar()},
		{"else", stepsSchema()},
		{"repeat", intish()},
		{"for_each", scalar()},
		{"as", str()},
		{"choose", listOf(section("steps[].choose[]", "", []prop{
			{"weight", atLeastOne(MaxWeight)}, {"steps", stepsSchema()},
		}, "steps"))},
		{"steps", stepsSchema()},
	})
	s["anyOf"] = []obj{{"required": []string{"if"}}, {"required": []string{"repeat"}}, {"required": []string{"for_each"}}, {"required": []string{"choose"}}}
	return s
}
