"use strict";
// A client of palaestra's external-environment protocol, version 1 (docs/external-environments.md):
// a ZMQ ROUTER socket that answers palaestra's commands (hello, reset, step, close), one world
// per session. JSON only (palaestra's default encoding). Needs the `zeromq` package (v6).

const zmq = require("zeromq");

const PROTOCOL_VERSION = 1;
const SUPPORTED_VERSIONS = [1];
const NON_FINITE = { inf: Infinity, "-inf": -Infinity, nan: NaN };

function fromStrict(value) {
  if (typeof value === "string") return value in NON_FINITE ? NON_FINITE[value] : value;
  if (Array.isArray(value)) return value.map(fromStrict);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = fromStrict(v);
    return out;
  }
  return value;
}

function toStrict(value) {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
  }
  if (Array.isArray(value)) return value.map(toStrict);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = toStrict(v);
    return out;
  }
  return value;
}

function error(id, text) {
  return { id, status: "error", error: text };
}

class Server {
  // makeWorld(hello) returns an object with describe(), reset() and step(setpoints), as the
  // Python reference client's worlds: step returns [sensors, rewards, terminated, truncated].
  constructor(makeWorld, { exitOnClose = false } = {}) {
    this.makeWorld = makeWorld;
    this.exitOnClose = exitOnClose;
    this.sessions = new Map(); // session id -> {world, episode, step, lastId, lastAnswer}
    this.peers = new Map(); // peer routing id (hex) -> session id
    this.socket = new zmq.Router({ linger: 0 });
  }

  async bind(address) {
    await this.socket.bind(address); // palaestra has connect: address
  }

  connect(address) {
    this.socket.connect(address); // palaestra has bind: address
  }

  async serve() {
    for await (const frames of this.socket) {
      const [peer, ...payloads] = frames;
      let answer;
      try {
        if (payloads.length !== 1) throw new Error(`expected one frame per command, got ${payloads.length}`);
        const text = payloads[0].toString("utf8");
        if (!text.startsWith("{")) throw new Error("not a JSON object (this client reads JSON only: use encoding: json)");
        let command;
        try {
          command = fromStrict(JSON.parse(text));
        } catch (e) {
          throw new Error(`not JSON: ${e.message}`);
        }
        answer = this.answer(peer.toString("hex"), command);
      } catch (e) {
        answer = error(null, e.message);
      }
      await this.socket.send([peer, JSON.stringify(toStrict(answer))]);
      if (this.exitOnClose && answer.closed && this.sessions.size === 0) break;
    }
    this.socket.close();
  }

  answer(peer, command) {
    const id = command.id;
    if (!Number.isInteger(id)) return error(null, `a command needs an integer 'id', got ${JSON.stringify(id)}`);
    const name = command.command;
    if (name === "hello") return this.hello(peer, id, command);
    const sessionId = this.peers.get(peer);
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    if (session === undefined) return error(id, `'${name}' before 'hello': greet first`);
    if (id === session.lastId && session.lastAnswer !== null) return session.lastAnswer;
    let answer;
    try {
      if (name === "reset") {
        answer = { id, status: "ok", sensors: session.world.reset() };
        session.episode += 1;
        session.step = 0;
      } else if (name === "step") {
        const setpoints = command.setpoints;
        if (setpoints === null || typeof setpoints !== "object" || Array.isArray(setpoints)) {
          return error(id, "'step' needs 'setpoints', an object by actuator uid");
        }
        const [sensors, rewards, terminated, truncated] = session.world.step(setpoints);
        session.step += 1;
        answer = { id, status: "ok", sensors, rewards, terminated: !!terminated, truncated: !!truncated && !terminated };
      } else if (name === "close") {
        this.sessions.delete(sessionId);
        this.peers.delete(peer);
        return { id, status: "ok", closed: true };
      } else {
        return error(id, `unknown command ${JSON.stringify(name)}`);
      }
    } catch (e) {
      return error(id, `${e.name}: ${e.message}`);
    }
    session.lastId = id;
    session.lastAnswer = answer;
    return answer;
  }

  hello(peer, id, command) {
    if (!SUPPORTED_VERSIONS.includes(command.version)) {
      return error(id, `protocol version ${JSON.stringify(command.version)} is not supported; this client speaks ${SUPPORTED_VERSIONS.join(", ")}`);
    }
    const sessionId = command.session;
    if (typeof sessionId !== "string" || sessionId === "") return error(id, "'hello' needs a 'session' string");
    let session = this.sessions.get(sessionId);
    const resumed = command.resume !== null && typeof command.resume === "object" && session !== undefined;
    if (!resumed) {
      let world;
      try {
        world = this.makeWorld(command);
      } catch (e) {
        return error(id, `cannot make the world: ${e.name}: ${e.message}`);
      }
      session = { world, episode: -1, step: 0, lastId: null, lastAnswer: null };
      this.sessions.set(sessionId, session);
    }
    for (const [other, known] of this.peers) if (known === sessionId) this.peers.delete(other);
    this.peers.set(peer, sessionId);
    return {
      id,
      status: "ok",
      version: PROTOCOL_VERSION,
      resumed,
      last_id: resumed ? session.lastId : null,
      episode: session.episode,
      step: session.step,
      ...session.world.describe(),
    };
  }
}

function parseArguments(argv) {
  const args = { connect: null, bind: null, exitOnClose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--connect" || a === "--bind") args[a.slice(2)] = argv[++i];
    else if (a === "--exit-on-close") args.exitOnClose = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if ((args.connect === null) === (args.bind === null) || args[args.connect === null ? "bind" : "connect"] === undefined) {
    throw new Error("give exactly one of --connect ADDRESS (palaestra binds) and --bind ADDRESS (palaestra connects)");
  }
  return args;
}

module.exports = { PROTOCOL_VERSION, Server, parseArguments, fromStrict, toStrict };
