# Writes the .jmx fixtures of this directory: python3 gen.py (from testdata/).
# Each element is written as JMeter 5 writes it (XStream: an element, then the hashTree of its children).
import sys
def sp(n,v): return f'<stringProp name="{n}">{v}</stringProp>'
def bp(n,v): return f'<boolProp name="{n}">{"true" if v else "false"}</boolProp>'
def ip(n,v): return f'<intProp name="{n}">{v}</intProp>'
def el(cls, name, props, children=None, enabled=True, tag=None):
    tag = tag or cls
    out = f'<{tag} guiclass="x" testclass="{cls}" testname="{name}" enabled="{"true" if enabled else "false"}">\n' + "\n".join(props) + f'\n</{tag}>\n'
    if children is None: return out + '<hashTree/>\n'
    return out + '<hashTree>\n' + "".join(children) + '</hashTree>\n'
def args(pairs, raw=False):
    items = "".join(f'<elementProp name="{n}" elementType="HTTPArgument">{bp("HTTPArgument.always_encode", False)}{sp("Argument.value", v)}{sp("Argument.metadata","=")}{sp("Argument.name", n)}</elementProp>' for n,v in pairs)
    return f'<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">{items}</collectionProp></elementProp>'
def sampler(name, method, path, pairs=(), raw=False, domain="", children=None, extra=(), follow=True):
    props = [args(pairs), sp("HTTPSampler.domain", domain), sp("HTTPSampler.path", path), sp("HTTPSampler.method", method), bp("HTTPSampler.follow_redirects", follow), bp("HTTPSampler.auto_redirects", False), bp("HTTPSampler.postBodyRaw", raw)] + list(extra)
    return el("HTTPSamplerProxy", name, props, children)
def headers(name, pairs):
    items = "".join(f'<elementProp name="" elementType="Header">{sp("Header.name", n)}{sp("Header.value", v)}</elementProp>' for n,v in pairs)
    return el("HeaderManager", name, [f'<collectionProp name="HeaderManager.headers">{items}</collectionProp>'])
def loopctl(loops):
    return f'<elementProp name="ThreadGroup.main_controller" elementType="LoopController" guiclass="LoopControlPanel" testclass="LoopController" testname="Loop Controller" enabled="true">{bp("LoopController.continue_forever", False)}{sp("LoopController.loops", loops)}</elementProp>'
def tg(name, children, n="1", ramp="0", sched=False, dur="", delay="", loops="1", enabled=True, cls="ThreadGroup"):
    props=[sp("ThreadGroup.on_sample_error","continue"), loopctl(loops), sp("ThreadGroup.num_threads", n), sp("ThreadGroup.ramp_time", ramp), bp("ThreadGroup.scheduler", sched), sp("ThreadGroup.duration", dur), sp("ThreadGroup.delay", delay)]
    return el(cls, name, props, children, enabled)
def plan(name, children, udv=()):
    items = "".join(f'<elementProp name="{n}" elementType="Argument">{sp("Argument.name", n)}{sp("Argument.value", v)}{sp("Argument.metadata","=")}</elementProp>' for n,v in udv)
    tp = f'<TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="{name}" enabled="true"><elementProp name="TestPlan.user_defined_variables" elementType="Arguments"><collectionProp name="Arguments.arguments">{items}</collectionProp></elementProp></TestPlan>\n'
    return '<?xml version="1.0" encoding="UTF-8"?>\n<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">\n<hashTree>\n' + tp + '<hashTree>\n' + "".join(children) + '</hashTree>\n</hashTree>\n</jmeterTestPlan>\n'
def defaults(proto, domain, port):
    return el("ConfigTestElement", "HTTP Request Defaults", ['<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments"/></elementProp>', sp("HTTPSampler.domain", domain), sp("HTTPSampler.port", port), sp("HTTPSampler.protocol", proto)])

def s(name): return sampler(name, "GET", "/"+name.lower())
conc = el("com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup", "Azure", [sp("TargetLevel","20"), sp("RampUp","2"), sp("Steps","4"), sp("Hold","3"), sp("Unit","M"), sp("Iterations","")], [s("C")])
step = el("kg.apc.jmeter.threads.SteppingThreadGroup", "Steps", [sp("ThreadGroup.num_threads","10"), sp("Threads initial delay","0"), sp("Start users count burst","2"), sp("Start users count","4"), sp("Start users period","30"), sp("flighttime","60"), sp("Stop users count","5"), sp("Stop users period","1"), sp("rampUp","0")], [s("S")])
ult = el("kg.apc.jmeter.threads.UltimateThreadGroup", "Ultimate", [], [s("U")])
open("groups.jmx","w").write(plan("Groups", [
  defaults("http","127.0.0.1","8080"),
  tg("Browse", [s("B")], n="10", ramp="10", sched=True, dur="60", delay="5"),
  tg("Loops", [s("L")], n="3", loops="5"),
  conc, step,
  tg("Setup", [sampler("login", "POST", "/setup")], cls="SetupThreadGroup"),
  tg("Off", [s("O")], enabled=False),
  ult,
]))

tc = el("TransactionController", "Checkout", [bp("TransactionController.parent", False)], [
  sampler("cart", "GET", "/cart"),
  el("LoopController", "Three times", [bp("LoopController.continue_forever", True), sp("LoopController.loops", "3")], [sampler("item", "GET", "/items/${__Random(1,40)}")]),
])
ifc = el("IfController", "Has token", [sp("IfController.condition", '${__jexl3("${token}" == "ok")}'), bp("IfController.evaluateAll", False), bp("IfController.useExpression", True)], [sampler("guarded", "GET", "/guarded")])
ifbad = el("IfController", "Scripted", [sp("IfController.condition", '${__groovy(vars.get("a").length() > 3)}')], [sampler("scripted", "GET", "/scripted")])
wh = el("WhileController", "Poll", [sp("WhileController.condition", '${__jexl3("${token}" != "done")}')], [sampler("poll", "GET", "/poll")])
rnd = el("RandomController", "One of", [], [sampler("a", "GET", "/a"), sampler("b", "GET", "/b")])
once = el("OnceOnlyController", "Login", [], [sampler("login", "POST", "/login", pairs=[("user","u${__threadNum}"), ("pass","secret")], children=[
  el("RegexExtractor", "token", [sp("RegexExtractor.useHeaders","false"), sp("RegexExtractor.refname","token"), sp("RegexExtractor.regex",'token=(\\w+)'), sp("RegexExtractor.template","$1$"), sp("RegexExtractor.default",""), sp("RegexExtractor.match_number","1")]),
])])
jsr = el("JSR223Sampler", "Script", [sp("scriptLanguage","groovy"), sp("script","log.info('x')")])
open("samplers.jmx","w").write(plan("Shop", [
  defaults("https","shop.example.com","443"),
  headers("Plan headers", [("Accept","application/json"), ("X-Env","${__P(env,stage)}"), ("Host", "shop.example.com")]),
  tg("Users", [
    once,
    sampler("search", "GET", "/search", pairs=[("q","shoes"), ("id","${__UUID()}"), ("n","${user_count}")]),
    sampler("order", "PUT", "/orders/${token}", pairs=[("", '{"qty": 1, "t": "{{x}}"}')], raw=True, children=[headers("Own headers", [("Accept","text/plain"), ("Content-Type","application/json")])]),
    sampler("other host", "DELETE", "/x", domain="api.example.com", follow=False),
    sampler("options", "OPTIONS", "/"),
    tc, ifc, ifbad, wh, rnd, jsr,
  ], n="${__P(threads,5)}", ramp="5", sched=True, dur="${__P(duration,30)}"),
], udv=[("user_count", "7")]))

def coll(name, items): return f'<collectionProp name="{name}">' + "".join(f'<stringProp name="{i}">{v}</stringProp>' for i,v in enumerate(items)) + '</collectionProp>'
def resp(name, field, typ, items, extra=()):
    return el("ResponseAssertion", name, [coll("Asserion.test_strings", items), sp("Assertion.test_field", field), bp("Assertion.assume_success", False), ip("Assertion.test_type", typ)] + list(extra))
def jpa(name, path, val, validate=True, regex=False, invert=False):
    return el("JSONPathAssertion", name, [sp("JSON_PATH", path), sp("EXPECTED_VALUE", val), bp("JSONVALIDATION", validate), bp("EXPECT_NULL", False), bp("INVERT", invert), bp("ISREGEX", regex)], tag="JSONPathAssertion")
def csvset(name, fn, names, delim=",", ignore=False, recycle=True, stop=False, share="shareMode.all"):
    return el("CSVDataSet", name, [sp("filename", fn), sp("variableNames", names), sp("delimiter", delim), bp("ignoreFirstLine", ignore), bp("recycle", recycle), bp("stopThread", stop), sp("shareMode", share)])
def timer(cls, name, delay, rng=None):
    props=[sp("ConstantTimer.delay", delay)]
    if rng is not None: props.append(sp("RandomTimer.range", rng))
    return el(cls, name, props)
def regex(name, ref, rx, tmpl="$1$", match="1", hdr="false", default=""):
    return el("RegexExtractor", name, [sp("RegexExtractor.useHeaders", hdr), sp("RegexExtractor.refname", ref), sp("RegexExtractor.regex", rx), sp("RegexExtractor.template", tmpl), sp("RegexExtractor.default", default), sp("RegexExtractor.match_number", match)])
def boundary(name, ref, l, r):
    return el("BoundaryExtractor", name, [sp("BoundaryExtractor.useHeaders","false"), sp("BoundaryExtractor.refname", ref), sp("BoundaryExtractor.lboundary", l), sp("BoundaryExtractor.rboundary", r), sp("BoundaryExtractor.match_number","1")])
def jext(name, refs, paths, matches="1"):
    return el("JSONPostProcessor", name, [sp("JSONPostProcessor.referenceNames", refs), sp("JSONPostProcessor.jsonPathExprs", paths), sp("JSONPostProcessor.match_numbers", matches)])
open("checks.jmx","w").write(plan("Checks", [
  defaults("http","127.0.0.1","8080"),
  csvset("Accounts", "data/accounts.csv", "user,pass", delim=";", recycle=False, stop=True),
  csvset("Cities", "cities.csv", "", share="shareMode.thread"),
  tg("Users", [
    timer("UniformRandomTimer", "Uniform", "200", "300"),
    resp("Status OK", "Assertion.response_code", 8, ["200"]),
    sampler("login", "POST", "/login", pairs=[("user","${user}"), ("pass","${pass}")], children=[
      regex("session", "session", 'session="([^"]+)"', default="NONE"),
      regex("second", "second", 'id=(\\d+)', match="2"),
      regex("two groups", "pair", '(\\w+)=(\\w+)', tmpl="$1$-$2$"),
      regex("from headers", "loc", 'Location: (.*)', hdr="true"),
      boundary("csrf", "csrf", 'name="csrf" value="', '"'),
      jext("ids", "first_id;all_ids;deep", "$.items[0].id;$.items[*].id;$..id"),
      resp("Created or OK", "Assertion.response_code", 2+32, ["200", "201"]),
      resp("Welcome", "Assertion.response_data", 16, ["Welcome", "${user}"]),
      resp("Not error", "Assertion.response_data", 4+16, ["error"]),
      el("DurationAssertion", "Fast", [sp("DurationAssertion.duration", "1500")]),
      jpa("status", "$.status", "active"),
      jpa("count", "$.count", "3"),
      jpa("exists", "$.token", "", validate=False),
      jpa("regex", "$.name", "a.*", regex=True),
    ]),
    sampler("city", "GET", "/cities/${city}/weather", children=[
      timer("GaussianRandomTimer", "Gauss", "1000", "250"),
      timer("ConstantTimer", "Fixed", "${__P(pause,50)}"),
    ]),
  ], n="2"),
]))
