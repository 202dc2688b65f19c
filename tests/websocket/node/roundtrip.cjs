// stomp.js (@stomp/stompjs) under Node, over the `ws` package, against a FerryMQ ws:// listener.
// Usage: node roundtrip.cjs ws://127.0.0.1:PORT COUNT [FROM_TCP]
// Subscribes to /queue/node-in (where a TCP client left FROM_TCP messages, default 1) and
// /queue/node-loop, sends COUNT messages to /queue/node-loop, acknowledges what it receives,
// sends one to /queue/node-out for the TCP client, then prints one line of JSON and exits 0.
"use strict";

const { Client } = require("@stomp/stompjs");
const WebSocket = require("ws");

const [url, countText, fromTcpText] = process.argv.slice(2);
const count = Number(countText);
const fromTcp = fromTcpText === undefined ? 1 : Number(fromTcpText);
const received = [];
let subprotocol = null;

function finish(code, extra) {
  console.log(JSON.stringify({ subprotocol, received, ...extra }));
  process.exit(code);
}

const timer = setTimeout(() => finish(2, { error: "timed out" }), 20000);

const client = new Client({
  brokerURL: url,
  webSocketFactory: () => new WebSocket(url, ["v12.stomp", "v11.stomp", "v10.stomp"]),
  reconnectDelay: 0,
  heartbeatIncoming: 1000,
  heartbeatOutgoing: 1000,
  onConnect: (frame) => {
    subprotocol = client.webSocket.protocol;
    const version = frame.headers.version;
    const onMessage = (message) => {
      received.push({
        destination: message.headers.destination,
        body: message.body,
        header: message.headers["x-from"] || null,
      });
      message.ack();
      if (received.length === count + fromTcp) {
        client.publish({ destination: "/queue/node-out", body: "from stomp.js" });
        clearTimeout(timer);
        client.deactivate().then(() => finish(0, { version }));
      }
    };
    client.subscribe("/queue/node-in", onMessage, { ack: "client-individual" });
    client.subscribe("/queue/node-loop", onMessage, { ack: "client-individual" });
    for (let n = 0; n < count; n++) {
      client.publish({
        destination: "/queue/node-loop",
        body: `node ${n}`,
        headers: { "x-from": "node" },
      });
    }
  },
  onStompError: (frame) => finish(1, { error: frame.headers.message || "ERROR" }),
  onWebSocketError: () => finish(1, { error: "WebSocket error" }),
});

client.activate();
