// Preload (--import) that shifts this process's clock by ONCEONLY_SKEW_MS: Date.now() and new Date()
// lie, as on a host whose clock drifted. The machine's clock is left alone.
const offset = Number(process.env.ONCEONLY_SKEW_MS ?? 0);
const RealDate = Date;
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...args);
  }
  static now() {
    return RealDate.now() + offset;
  }
}
globalThis.Date = SkewedDate;
