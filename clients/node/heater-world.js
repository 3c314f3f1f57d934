#!/usr/bin/env node
"use strict";
// The heated room of palaestra's reference client (palaestra/clients/python/heater_world.py),
// ported to Node.js: the same sensors, actuator, reward and numbers, bit for bit, for the same
// seed (xorshift32 and only +, -, *, / on doubles).
//
//   node heater-world.js --connect tcp://127.0.0.1:5555   # palaestra has bind: ...
//   node heater-world.js --bind tcp://127.0.0.1:5555      # palaestra has connect: ...

const { Server, parseArguments } = require("./palaestra-client");

class XorShift32 {
  constructor(seed) {
    this.state = Number(BigInt.asUintN(32, BigInt(seed))) || 0x9e3779b9;
  }

  next() {
    let x = this.state;
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    this.state = x;
    return x / 4294967296.0;
  }
}

function powerOf(value) {
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new Error(`power: expected one value, got ${JSON.stringify(value)}`);
    value = value[0];
  }
  if (typeof value !== "number") throw new Error(`power: expected a number, got ${JSON.stringify(value)}`);
  return Math.min(1.0, Math.max(0.0, value));
}

class HeaterWorld {
  constructor(seed, config = {}) {
    this.steps = Math.trunc(config.steps ?? 20);
    this.target = Number(config.target ?? 21.0);
    if (!(this.steps >= 1)) throw new Error(`config.steps must be at least 1, got ${this.steps}`);
    this.rng = new XorShift32(seed);
    this.temperature = 0.0;
    this.outside = 0.0;
    this.time = 0;
    this.over = true; // no episode yet, or it ended: reset first
  }

  describe() {
    const degrees = { type: "Box", low: -50.0, high: 100.0, shape: [1], dtype: "float64" };
    return {
      name: "heater (node)",
      sensors: [
        { uid: "temperature", space: degrees },
        { uid: "outside", space: degrees },
        { uid: "time", space: { type: "Discrete", n: this.steps + 1, start: 0 } },
      ],
      actuators: [
        { uid: "power", space: { type: "Box", low: 0.0, high: 1.0, shape: [1], dtype: "float64" }, value: [0.0] },
      ],
      rewards: [{ uid: "comfort", space: { type: "Box", low: "-inf", high: "inf", shape: [], dtype: "float64" } }],
    };
  }

  sensors() {
    return { temperature: [this.temperature], outside: [this.outside], time: this.time };
  }

  reset() {
    this.temperature = 15.0 + 10.0 * this.rng.next();
    this.outside = 0.0 + 10.0 * this.rng.next();
    this.time = 0;
    this.over = false;
    return this.sensors();
  }

  step(setpoints) {
    if (this.over) throw new Error("the episode is over (or never began): reset first");
    const power = powerOf(setpoints.power ?? [0.0]);
    this.outside = this.outside + (this.rng.next() - 0.5);
    this.temperature = this.temperature + 0.1 * (this.outside - this.temperature) + 2.0 * power;
    this.time += 1;
    const comfort = -Math.abs(this.temperature - this.target) - 0.1 * power;
    const terminated = this.temperature < 0.0 || this.temperature > 40.0;
    const truncated = this.time >= this.steps && !terminated;
    this.over = terminated || truncated;
    return [this.sensors(), { comfort }, terminated, truncated];
  }
}

async function main() {
  let args;
  try {
    args = parseArguments(process.argv.slice(2));
  } catch (e) {
    console.error(`heater-world: ${e.message}`);
    process.exit(2);
  }
  const server = new Server((hello) => new HeaterWorld(hello.seed ?? 0, hello.config ?? {}), {
    exitOnClose: args.exitOnClose,
  });
  if (args.connect !== null) server.connect(args.connect);
  else await server.bind(args.bind);
  await server.serve();
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`heater-world: ${e.stack || e}`);
    process.exit(1);
  });
}

module.exports = { HeaterWorld, XorShift32 };
