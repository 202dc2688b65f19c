// rhea (the JavaScript AMQP 1.0 client) against a FerryMQ AMQP listener, as a user writes it.
// Usage: node scenarios.cjs SCENARIO PORT [ARG]; prints one JSON line with what happened.
// Each scenario ends the process (exit 1 with the error on stderr if anything fails); the
// Python test (tests/amqp/test_rhea.py) sets the deadline.
"use strict";

const rhea = require("rhea");

const [scenario, portText, arg] = process.argv.slice(2);
const port = Number(portText);

function connect(options = {}) {
  const container = rhea.create_container({ id: options.container_id || `rhea-${process.pid}-${Math.random()}` });
  const connection = container.connect({ host: "127.0.0.1", port, reconnect: false, ...options });
  connection.on("connection_error", (context) => fail(`connection error: ${JSON.stringify(context.connection.error)}`));
  connection.on("disconnected", (context) => {
    if (!connection.closing) fail(`disconnected: ${context.error || "by the broker"}`);
  });
  return connection;
}

function once(emitter, event) {
  return new Promise((resolve) => emitter.once(event, resolve));
}

function fail(reason) {
  process.stderr.write(`${reason}\n`);
  process.exit(1);
}

function done(result) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

function close(connection) {
  connection.closing = true;
  connection.close();
  return once(connection, "connection_close");
}

// Send every message, resolving with the outcomes the broker gave (none when pre-settled).
function sendAll(connection, address, messages, options = {}) {
  return new Promise((resolve) => {
    const sender = connection.open_sender({ target: { address }, ...options });
    const outcomes = [];
    let next = 0;
    const presettled = options.snd_settle_mode === 1;
    const push = () => {
      while (next < messages.length && sender.sendable()) sender.send(messages[next++]);
      if (presettled && next === messages.length) resolve({ sender, outcomes });
    };
    sender.on("sendable", push);
    sender.on("accepted", () => {
      outcomes.push("accepted");
      if (outcomes.length === messages.length) resolve({ sender, outcomes });
    });
    sender.on("rejected", (context) => fail(`rejected: ${JSON.stringify(context.delivery.remote_state)}`));
  });
}

function receive(connection, source, count, options = {}) {
  return new Promise((resolve) => {
    const receiver = connection.open_receiver({ source, credit_window: 20, ...options });
    const messages = [];
    if (count === 0) receiver.once("receiver_open", () => resolve({ receiver, messages }));
    receiver.on("message", (context) => {
      messages.push(context.message);
      if (messages.length === count) resolve({ receiver, messages });
    });
    receiver.on("receiver_error", (context) => fail(`receiver error: ${JSON.stringify(context.receiver.error)}`));
  });
}

const text = (message) => (Buffer.isBuffer(message.body) ? message.body.toString() : message.body);

const scenarios = {
  // Every settlement mode of the sender and of the receiver, durable and not.
  async settlement() {
    const connection = connect();
    const report = {};
    for (const [mode, settle] of [["at-most-once", 1], ["at-least-once", 0]]) {
      for (const durable of [true, false]) {
        const address = `queue://rhea.${mode}.${durable}`;
        const messages = Array.from({ length: 10 }, (_, n) => ({ body: `m${n}`, durable, application_properties: { n } }));
        const sent = await sendAll(connection, address, messages, { snd_settle_mode: settle });
        const got = await receive(connection, { address }, 10, { snd_settle_mode: settle, autoaccept: settle === 0 });
        got.receiver.close();
        report[`${mode}/${durable}`] = {
          outcomes: sent.outcomes.length,
          bodies: got.messages.map(text),
          durable: got.messages.map((m) => Boolean(m.durable)),
        };
      }
    }
    await close(connection);
    done(report);
  },

  async selector() {
    const connection = connect();
    const colours = ["red", "blue", "red", "green"];
    await sendAll(connection, "queue://rhea.colours", colours.map((colour, n) => ({ body: `${colour}-${n}`, application_properties: { colour } })));
    const got = await receive(connection, { address: "queue://rhea.colours", filter: rhea.filter.selector("colour = 'red'") }, 2);
    await new Promise((resolve) => setTimeout(resolve, 500)); // nothing more may come
    await close(connection);
    done({ bodies: got.messages.map(text), extra: got.messages.length - 2 });
  },

  // Phase "subscribe" attaches and leaves (detach by going away); "resume N" takes N missed
  // messages and then unsubscribes (detach with closed=true).
  async durable() {
    const connection = connect({ container_id: "rhea-durable-client" });
    const source = { address: "topic://rhea.prices", durable: 2, expiry_policy: "never" };
    const count = arg === "subscribe" ? 0 : Number(arg);
    const got = await receive(connection, source, count, { name: "rhea-sub" });
    if (count > 0) {
      got.receiver.close();
      await once(got.receiver, "receiver_close");
    }
    await close(connection);
    done({ bodies: got.messages.map(text) });
  },

  // A temporary queue (dynamic source) as reply-to; the responder answers through the
  // anonymous relay (a sender with no target, the message's ``to`` naming the destination).
  async rpc() {
    const responder = connect();
    const requests = await receive(responder, { address: "queue://rhea.requests" }, 0);
    requests.receiver.on("message", (context) => {
      const relay = responder.open_sender({ target: {} });
      relay.once("sendable", () => relay.send({ to: context.message.reply_to, body: `re: ${context.message.body}`, correlation_id: context.message.message_id }));
    });
    const client = connect();
    const replies = client.open_receiver({ source: { dynamic: true } });
    await once(replies, "receiver_open");
    const replyTo = replies.source.address;
    const answered = once(replies, "message");
    await sendAll(client, "queue://rhea.requests", [{ body: "ping", reply_to: replyTo, message_id: "req-1" }]);
    const reply = (await answered).message;
    await close(client);
    await close(responder);
    done({ reply_to: replyTo, body: text(reply), correlation_id: reply.correlation_id });
  },

  async large() {
    const connection = connect();
    const size = 10 * 1024 * 1024;
    const body = Buffer.alloc(size, "abcdefghij");
    await sendAll(connection, "queue://rhea.large", [{ body: rhea.message.data_section(body), durable: true }]);
    const got = await receive(connection, { address: "queue://rhea.large" }, 1);
    const received = got.messages[0].body;
    const bytes = Buffer.isBuffer(received) ? received : received.content;
    await close(connection);
    done({ size: bytes.length, same: Buffer.compare(bytes, body) === 0, max_frame: connection.remote.open.max_frame_size });
  },

  // Idle (no messages) for ARG ms: rhea keeps the connection alive with heart-beats, then
  // still sends and receives.
  async heartbeat() {
    const connection = connect({ idle_time_out: 1000 });
    await once(connection, "connection_open");
    const brokerIdle = connection.remote.open.idle_time_out;
    await new Promise((resolve) => setTimeout(resolve, Number(arg)));
    await sendAll(connection, "queue://rhea.alive", [{ body: "still here" }]);
    const got = await receive(connection, { address: "queue://rhea.alive" }, 1);
    await close(connection);
    done({ broker_idle_time_out: brokerIdle, body: text(got.messages[0]) });
  },
};

const run = scenarios[scenario];
if (run === undefined) fail(`unknown scenario ${scenario}: one of ${Object.keys(scenarios).join(", ")}`);
run().catch((error) => fail(error.stack || String(error)));
