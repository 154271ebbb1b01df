/**
 * An OTLP trace export in its protobuf encoding (opentelemetry-proto's
 * ExportTraceServiceRequest), read into the shape of its JSON encoding (ids as hex,
 * enums as numbers), so that the test receiver reads both alike. Only the fields the
 * tests look at are read; the others are skipped by their wire type.
 */

/** A field as the wire has it: a varint or fixed-width number, or the bytes of a length-delimited one. */
type WireValue = number | Buffer

/** The fields of one message, in order, by field number (repeated fields appear once each). */
function fieldsOf (message: Buffer): Array<[number, WireValue]> {
  const fields: Array<[number, WireValue]> = []
  let at = 0
  const varint = (): number => {
    let value = 0
    for (let shift = 0; ; shift += 7) {
      const byte = message[at++]
      if (byte === undefined) throw new Error('protobuf: message ends inside a varint')
      value += (byte & 0x7f) * 2 ** shift
      if ((byte & 0x80) === 0) return value
    }
  }
  while (at < message.length) {
    const tag = varint()
    const [number, wireType] = [Math.floor(tag / 8), tag % 8]
    switch (wireType) {
      case 0: fields.push([number, varint()]); break
      case 1: fields.push([number, message.readDoubleLE(at)]); at += 8; break
      case 2: {
        const length = varint()
        fields.push([number, message.subarray(at, at + length)])
        at += length
        break
      }
      case 5: at += 4; break
      default: throw new Error(`protobuf: wire type ${wireType} of field ${number} is not read here`)
    }
  }
  return fields
}

const all = (message: Buffer, number: number): WireValue[] => fieldsOf(message).filter(([n]) => n === number).map(([, value]) => value)
const bytesOf = (message: Buffer, number: number): Buffer[] => all(message, number).filter((value): value is Buffer => Buffer.isBuffer(value))
const one = (message: Buffer, number: number): WireValue | undefined => all(message, number)[0]
const text = (message: Buffer, number: number): string | undefined => bytesOf(message, number)[0]?.toString('utf8')
const hex = (message: Buffer, number: number): string | undefined => bytesOf(message, number)[0]?.toString('hex')

interface AnyValue { stringValue?: string, intValue?: number, boolValue?: boolean, doubleValue?: number }
export interface KeyValue { key: string, value: AnyValue }

/** AnyValue: 1 string, 2 bool, 3 int64, 4 double (arrays, maps and bytes are not used by the services). */
function anyValue (message: Buffer): AnyValue {
  const [[number, value] = [0, 0]] = fieldsOf(message)
  switch (number) {
    case 1: return { stringValue: (value as Buffer).toString('utf8') }
    case 2: return { boolValue: value === 1 }
    case 3: return { intValue: value as number }
    case 4: return { doubleValue: value as number }
    default: return {}
  }
}

/** KeyValue: 1 key, 2 value. */
const keyValues = (messages: Buffer[]): KeyValue[] =>
  messages.map((kv) => ({ key: text(kv, 1) ?? '', value: anyValue(bytesOf(kv, 2)[0] ?? Buffer.alloc(0)) }))

/**
 * ExportTraceServiceRequest: 1 ResourceSpans (1 Resource {1 attributes}, 2 ScopeSpans
 * {2 Span}); Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind,
 * 9 attributes, 15 Status {3 code}.
 */
export function decodeProtobufExport (body: Buffer) {
  return {
    resourceSpans: bytesOf(body, 1).map((resourceSpans) => ({
      resource: { attributes: keyValues(bytesOf(bytesOf(resourceSpans, 1)[0] ?? Buffer.alloc(0), 1)) },
      scopeSpans: bytesOf(resourceSpans, 2).map((scopeSpans) => ({
        spans: bytesOf(scopeSpans, 2).map((span) => {
          const status = bytesOf(span, 15)[0]
          return {
            name: text(span, 5) ?? '',
            kind: (one(span, 6) as number | undefined) ?? 0,
            traceId: hex(span, 1) ?? '',
            spanId: hex(span, 2) ?? '',
            parentSpanId: hex(span, 4) ?? '',
            attributes: keyValues(bytesOf(span, 9)),
            status: { code: status === undefined ? 0 : (one(status, 3) as number | undefined) ?? 0 }
          }
        })
      }))
    }))
  }
}
