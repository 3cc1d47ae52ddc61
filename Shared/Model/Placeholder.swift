// Model
