const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx']

/** `2xx`, `4xx`, ...: the bounded label a duration is kept by (`0xx`: no status was sent). */
export function statusClassOf (status: number): string {
  return STATUS_CLASSES[Math.floor(status / 100)] ?? 'other'
}
