// record.js drives the official JavaScript client (@microsoft/signalr)
// through the Azure SignalR Service imitation that main.go serves, so
// main.go can write down what the client sent. Not run by CI: see
// ../README.md.
//
// usage: node record.js APP_HUB_URL LongPolling|ServerSentEvents RESTARTS
"use strict";
const signalR = require("@microsoft/signalr");

const [hubURL, transportName, restartsArg] = process.argv.slice(2);
const restarts = Number(restartsArg);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connected(conn) {
  for (let i = 0; i < 500 && conn.state !== signalR.HubConnectionState.Connected; i++) {
    await sleep(10);
  }
}

async function main() {
  const conn = new signalR.HubConnectionBuilder()
    .withUrl(hubURL, { transport: signalR.HttpTransportType[transportName] })
    // Restart at once: the official client's restart, without the
    // default delays, so the recording is short.
    .withAutomaticReconnect([0, 0, 0, 0, 0])
    .configureLogging(signalR.LogLevel.Warning)
    .build();
  let restarted = 0;
  conn.onreconnected(() => { restarted++; });
  await conn.start();
  // Invoke until the connection has been restarted often enough; each
  // invocation is one POST carrying the access token.
  for (let i = 0; restarted < restarts && i < 100; i++) {
    try {
      await conn.invoke("Add", i, 1);
    } catch (e) {
      await connected(conn);
    }
  }
  await conn.stop();
  console.log(`restarted ${restarted}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
